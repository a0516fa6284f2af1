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
 * The context is walked block by block (no division per position), and the softmax's exponentials
 * are a branch-free polynomial the compiler vectorises: a libm expf call per score cost more than
 * the dot products themselves.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* exp(x) for x <= 0 (scores minus their maximum), within 2 ulp of expf: Cody-Waite reduction to
 * r in [-ln2/2, ln2/2], a degree-6 polynomial (Cephes' expf coefficients), then scaling by 2^n. */
#pragma omp declare simd
static inline float exp_nonpositive(float x) {
    x = x < -87.0f ? -87.0f : x;  /* below this the result is under FLT_MIN: ~0 against the max's 1 */
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

static inline __attribute__((always_inline)) void attend_one(const float *qv, const float *k_pool, const float *v_pool, const int32_t *bt,
                       int32_t L, int32_t Hkv, int32_t kvh, int32_t D, int32_t bs, float scale,
                       float *scores, float *o) {
    const int64_t stride = (int64_t)Hkv * D; /* from one slot to the next inside a block */
    float m = -INFINITY;
    for (int32_t start = 0, b = 0; start < L; start += bs, b++) {
        const float *kb = k_pool + ((int64_t)bt[b] * bs * Hkv + kvh) * D;
        const int32_t n = L - start < bs ? L - start : bs;
        for (int32_t i = 0; i < n; i++) {
            const float *kv = kb + i * stride;
            float dot = 0.0f;
#pragma omp simd reduction(+ : dot)
            for (int32_t d = 0; d < D; d++) dot += qv[d] * kv[d];
            dot *= scale;
            scores[start + i] = dot;
            m = dot > m ? dot : m;
        }
    }
    float sum = 0.0f;
#pragma omp simd reduction(+ : sum)
    for (int32_t j = 0; j < L; j++) {
        const float e = exp_nonpositive(scores[j] - m);
        scores[j] = e;
        sum += e;
    }
    memset(o, 0, sizeof(float) * D);
    for (int32_t start = 0, b = 0; start < L; start += bs, b++) {
        const float *vb = v_pool + ((int64_t)bt[b] * bs * Hkv + kvh) * D;
        const int32_t n = L - start < bs ? L - start : bs;
        for (int32_t i = 0; i < n; i++) {
            const float *vv = vb + i * stride;
            const float p = scores[start + i];
#pragma omp simd
            for (int32_t d = 0; d < D; d++) o[d] += p * vv[d];
        }
    }
    const float inv = 1.0f / sum;
#pragma omp simd
    for (int32_t d = 0; d < D; d++) o[d] *= inv;
}

int paged_attention(const float *q, const float *k_pool, const float *v_pool, const int32_t *block_tables,
                    int32_t max_blocks, const int32_t *token_seq, const int32_t *token_pos, float *out,
                    int32_t T, int32_t H, int32_t Hkv, int32_t D, int32_t bs, float scale, int32_t max_len) {
    const int32_t group = H / Hkv;
    int failed = 0;
#pragma omp parallel
    {
        float *scores = (float *)malloc(sizeof(float) * (size_t)(max_len > 0 ? max_len : 1));
        if (scores == NULL) {
#pragma omp atomic write
            failed = 1;
        } else {
#pragma omp for schedule(dynamic, 4)
            for (int64_t th = 0; th < (int64_t)T * H; th++) {
                const int32_t t = (int32_t)(th / H), h = (int32_t)(th % H);
                const int32_t *bt = block_tables + (int64_t)token_seq[t] * max_blocks;
                if (D == 64) attend_one(q + th * D, k_pool, v_pool, bt, token_pos[t] + 1, Hkv, h / group, 64, bs, scale, scores, out + th * D);
                else if (D == 128) attend_one(q + th * D, k_pool, v_pool, bt, token_pos[t] + 1, Hkv, h / group, 128, bs, scale, scores, out + th * D);
                else attend_one(q + th * D, k_pool, v_pool, bt, token_pos[t] + 1, Hkv, h / group, D, bs, scale, scores, out + th * D);
            }
            free(scores);
        }
    }
    return failed;
}
