/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer entry (clang -fsanitize=fuzzer) for deep runs on demand:
 *   meson setup build-fuzz -Dfuzzer=true --native-file ... (see README)
 *   build-fuzz/tests/fuzz/fuzz-libfuzzer tests/fuzz/corpus
 * The input bytes drive the same model as the seeded loop, on the fake kernel.
 */
#include <stddef.h>
#include <stdint.h>

#include "model.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fuzz_src src = {.p = data, .n = size};
	struct fuzz_opts o = {.max_ops = 100000};

	fuzz_run(&src, &o);
	return 0;
}
