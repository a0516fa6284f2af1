/* Paged attention over a block-structured KV pool, for CPU.
 *
 * Every query token attends to the context positions 0..pos of its own sequence, found through that
 * sequence's block table, so prefill, chunked prefill, decode and mixed steps are one call with no
 * padding and no gathered copy of the cache (gathering on CPU cost several times the attention itself).
 *
 * Layouts (row-major, float32):
 *   q, out        [T, H, D]
 *   k_pool/v_pool [num_slots, Hkv, D]   slot = block_id * block_size + offset
 *   block_tables  [N, max_blocks] int32 (row token_seq[t] belongs to token t)
 *
 * Decode attention reads every cached key and value once per step, so it is bound by memory, not
 * arithmetic: one token's heads are done together, so each slot's row [Hkv, D] is read whole and a
 * block is one contiguous stream; the next block of the table is prefetched while this one is read
 * (blocks are scattered, and the hardware prefetcher stops at page boundaries); and the softmax's
 * exponentials are a branch-free polynomial the compiler vectorises (a libm call per score cost more
 * than the dot products).
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* exp(x) for x <= 0 (scores minus their maximum), within 2 ulp of expf: Cody-Waite reduction to
 * r in [-ln2/2, ln2/2], a degree-6 polynomial (Cephes' expf coefficients), then scaling by 2^n. */
#pragma omp declare simd
static inline float exp_nonpositive(float x) {
    x = x < -87.0f ? -87.0f : x; /* below this the result is under FLT_MIN: ~0 against the max's 1 */
    const float n = floorf(x * 1.44269504088896341f + 0.5f);
    const float r = x - n * 0.693359375f + n * 2.12194440e-4f;
    float p = 1.9875691500e-4f;
    p = p * r + 1.3981999507e-3f;
    p = p * r + 8.3334519073e-3f;
    p = p * r + 4.1665795894e-2f;
    p = p * r + 1.6666665459e-1f;
    p = p * r + 5.0000001201e-1f;
    p = p * r * r + r + 1.0f;
    union { int32_t i; float f; } scale = {.i = ((int32_t)n + 127) << 23};
    return p * scale.f;
}

static inline void prefetch_row(const float *row, int64_t floats) {
    for (int64_t c = 0; c < floats; c += 16) __builtin_prefetch(row + c); /* one 64-byte line per 16 floats */
}

/* Query token q [H, D] over context 0..L-1 of one sequence; scores holds H * L floats. D is a
 * compile-time constant at the common head sizes (the callers below), so the inner loops unroll. */
static inline __attribute__((always_inline)) void attend_token(
    const float *restrict q, const float *k_pool, const float *v_pool, const int32_t *bt, int32_t L, int32_t H,
    int32_t Hkv, int32_t D, int32_t bs, float scale, float *restrict scores, float *restrict o) {
    const int32_t group = H / Hkv;
    const int64_t stride = (int64_t)Hkv * D; /* one slot's row: every kv head */
    for (int32_t start = 0, b = 0; start < L; start += bs, b++) {
        const float *block = k_pool + (int64_t)bt[b] * bs * stride;
        const float *next = start + bs < L ? k_pool + (int64_t)bt[b + 1] * bs * stride : NULL;
        const int32_t n = L - start < bs ? L - start : bs;
        for (int32_t i = 0; i < n; i++) {
            const float *row = block + i * stride;
            if (next != NULL) prefetch_row(next + i * stride, stride);
            for (int32_t h = 0; h < H; h++) {
                const float *kv = row + (h / group) * D, *qv = q + h * D;
                float dot = 0.0f;
#pragma omp simd reduction(+ : dot)
                for (int32_t d = 0; d < D; d++) dot += qv[d] * kv[d];
                scores[h * L + start + i] = dot * scale;
            }
        }
    }
    for (int32_t h = 0; h < H; h++) {
        float *s = scores + h * L, m = -INFINITY, sum = 0.0f;
        for (int32_t j = 0; j < L; j++) m = s[j] > m ? s[j] : m;
#pragma omp simd reduction(+ : sum)
        for (int32_t j = 0; j < L; j++) {
            const float e = exp_nonpositive(s[j] - m);
            s[j] = e;
            sum += e;
        }
        const float inv = 1.0f / sum;
#pragma omp simd
        for (int32_t j = 0; j < L; j++) s[j] *= inv;
    }
    memset(o, 0, sizeof(float) * H * D);
    for (int32_t start = 0, b = 0; start < L; start += bs, b++) {
        const float *block = v_pool + (int64_t)bt[b] * bs * stride;
        const float *next = start + bs < L ? v_pool + (int64_t)bt[b + 1] * bs * stride : NULL;
        const int32_t n = L - start < bs ? L - start : bs;
        for (int32_t i = 0; i < n; i++) {
            const float *row = block + i * stride;
            if (next != NULL) prefetch_row(next + i * stride, stride);
            for (int32_t h = 0; h < H; h++) {
                const float *vv = row + (h / group) * D, p = scores[h * L + start + i];
                float *oh = o + h * D;
#pragma omp simd
                for (int32_t d = 0; d < D; d++) oh[d] += p * vv[d];
            }
        }
    }
}

int paged_attention(const float *q, const float *k_pool, const float *v_pool, const int32_t *block_tables,
                    int32_t max_blocks, const int32_t *token_seq, const int32_t *token_pos, float *out,
                    int32_t T, int32_t H, int32_t Hkv, int32_t D, int32_t bs, float scale, int32_t max_len) {
    int failed = 0;
#pragma omp parallel
    {
        float *scores = (float *)malloc(sizeof(float) * (size_t)H * (size_t)(max_len > 0 ? max_len : 1));
        if (scores == NULL) {
#pragma omp atomic write
            failed = 1;
        } else {
#pragma omp for schedule(dynamic, 1)
            for (int32_t t = 0; t < T; t++) {
                const int32_t *bt = block_tables + (int64_t)token_seq[t] * max_blocks;
                const float *qt = q + (int64_t)t * H * D;
                float *ot = out + (int64_t)t * H * D;
                const int32_t L = token_pos[t] + 1;
                if (D == 64)
                    attend_token(qt, k_pool, v_pool, bt, L, H, Hkv, 64, bs, scale, scores, ot);
                else if (D == 128)
                    attend_token(qt, k_pool, v_pool, bt, L, H, Hkv, 128, bs, scale, scores, ot);
                else
                    attend_token(qt, k_pool, v_pool, bt, L, H, Hkv, D, bs, scale, scores, ot);
            }
            free(scores);
        }
    }
    return failed;
}
