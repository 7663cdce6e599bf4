// Asks CUDA for eager module loading as libbraid.so loads (cuda/module_loading.h): a preloaded
// library's constructor runs before the application's first CUDA call, and so before the driver
// reads CUDA_MODULE_LOADING.
#include "cuda/module_loading.h"

namespace braid::shim {
namespace {

__attribute__((constructor)) void ask_for_eager_module_loading() { cuda::ask_for_eager_module_loading(); }

}  // namespace
}  // namespace braid::shim
