// CUDA's module loading, eager or lazy (CUDA_MODULE_LOADING, read by the driver once, at cuInit).
//
// Under lazy loading a kernel's first launch loads its module holding CUDA's context lock and
// waits for the device to go idle. The device may then wait for a split call's PCIe share, whose
// GPU work braid's progress thread can no longer queue behind that lock: FSDP2 stopped so on the
// one-GPU rig (docs/MULTIPATH.md, "Lazy module loading"). So braid asks for eager loading before
// CUDA starts, and keeps its PCIe share off where a process loads lazily all the same
// (multipath/stream_queues.h).
#pragma once

namespace braid::cuda {

// Sets CUDA_MODULE_LOADING=EAGER where the environment does not say (PyTorch sets LAZY only where
// it is unset) and BRAID_EAGER_MODULE_LOADING is not off. Only before the process's first CUDA
// call: libbraid.so's constructor, a program's main.
void ask_for_eager_module_loading();

// Whether this process loads modules lazily. Where the driver cannot say, CUDA_MODULE_LOADING
// decides as the driver reads it: lazy unless EAGER.
bool module_loading_is_lazy();

}  // namespace braid::cuda
