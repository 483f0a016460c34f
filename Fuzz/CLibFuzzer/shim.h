// libFuzzer's entry for a program with a main of its own (compiler-rt, FuzzerInterface.h). Declared
// here, not linked: only a fuzz target built with -sanitize=fuzzer refers to it.
#include <stddef.h>
#include <stdint.h>

int LLVMFuzzerRunDriver(int *argc, char ***argv, int (*UserCb)(const uint8_t *Data, size_t Size));
