/* libbraid-cuda-gate.so: the application's device-wide CUDA runtime calls, held back while braid's
   progress threads have GPU work to queue (docs/MULTIPATH.md, "The application's device-wide
   calls"). libbraid.so loads it into the process's global scope at load time, so that a CUDA
   runtime loaded later (PyTorch's, through Python's dlopen) has its callers' calls come here first;
   each is bracketed by the hooks libbraid.so installs and then forwarded to the runtime itself.
   Plain C and no CUDA headers: the gate only passes arguments through. */
#ifndef BRAID_CUDA_GATE_H_
#define BRAID_CUDA_GATE_H_

#ifdef __cplusplus
extern "C" {
#endif

struct braid_cuda_gate_hooks {
  /* Around a call that may wait for the whole device while it holds CUDA's context lock. */
  void (*began)(const char* what);
  void (*ended)(void);
};

/* Installs the hooks (null: none; calls then pass straight through). The struct must outlive the
   process's CUDA calls. */
void braid_cuda_gate_install(const struct braid_cuda_gate_hooks* hooks);

/* Calls bracketed so far (for tests and logs). */
unsigned long braid_cuda_gate_bracketed(void);

#ifdef __cplusplus
}
#endif

#endif
