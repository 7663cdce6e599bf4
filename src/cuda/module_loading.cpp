#include "cuda/module_loading.h"

#include <strings.h>

#include <cstdlib>

#include "cuda/driver_calls.h"

namespace braid::cuda {

void ask_for_eager_module_loading() { setenv("CUDA_MODULE_LOADING", "EAGER", /*overwrite=*/0); }

bool environment_asks_for_eager_loading() {
  const char* text = std::getenv("CUDA_MODULE_LOADING");
  return text != nullptr && strcasecmp(text, "EAGER") == 0;
}

bool module_loading_is_lazy() {
  CUmoduleLoadingMode mode{};
  if (driver().module_get_loading_mode != nullptr && driver().module_get_loading_mode(&mode) == CUDA_SUCCESS)
    return mode == CU_MODULE_LAZY_LOADING;
  const char* text = std::getenv("CUDA_MODULE_LOADING");
  return text == nullptr || strcasecmp(text, "EAGER") != 0;
}

}  // namespace braid::cuda
