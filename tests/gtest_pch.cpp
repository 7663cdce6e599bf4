// The target that compiles GoogleTest's header once (braid_gtest_pch, CMakeLists.txt); every test
// binary reuses it, since parsing gtest.h is most of a small test's compile time.
#include <gtest/gtest.h>
