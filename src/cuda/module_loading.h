// CUDA's module loading, eager or lazy (CUDA_MODULE_LOADING, read by the driver once, at cuInit).
//
// Under lazy loading a kernel's first launch loads its module holding CUDA's context lock and
// waits for the device to go idle. The device may then wait for a split call's PCIe share, whose
// GPU work braid's progress thread can no longer queue behind that lock: FSDP2 stopped so on the
// one-GPU rig (docs/MULTIPATH.md, "The deadlock rule"). So braid keeps its PCIe share off where
// a process loads lazily (multipath/paths_admitted.h). The drop-in never changes the application's
// choice: eager loading cost a PyTorch process about 1 GiB of GPU memory and seconds of start-up.
#pragma once

namespace braid::cuda {

// Sets CUDA_MODULE_LOADING=EAGER where the environment does not say. For braid's own programs
// (braid-bench), before their first CUDA call; never the drop-in's.
void ask_for_eager_module_loading();

// Whether the environment asks CUDA for eager loading (read before CUDA starts).
bool environment_asks_for_eager_loading();

// Whether this process loads modules lazily. Where the driver cannot say, CUDA_MODULE_LOADING
// decides as the driver reads it: lazy unless EAGER.
bool module_loading_is_lazy();

}  // namespace braid::cuda
