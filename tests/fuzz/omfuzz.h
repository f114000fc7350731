/*
 * omfuzz.h - the fuzzer's core, shared by the libFuzzer target and the
 * file-reading driver (AFL++ and the seed-corpus test).
 */
#ifndef OMFUZZ_H
#define OMFUZZ_H

#include <stddef.h>
#include <stdint.h>

/* Run one input; aborts on any mismatch.  Frees every block it made. */
int omfuzz_run(const uint8_t *data, size_t len);

/* Free every live block, checking it first. */
void omfuzz_reset(void);

/* The length of the operation that starts with this byte: 4 or 5. */
size_t omfuzz_op_len(unsigned char first);

/* Operations run so far. */
unsigned long long omfuzz_ops(void);

#endif /* OMFUZZ_H */
