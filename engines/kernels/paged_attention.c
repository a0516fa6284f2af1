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
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static void attend_one(const float *qv, const float *k_pool, const float *v_pool, const int32_t *bt,
                       int32_t L, int32_t Hkv, int32_t kvh, int32_t D, int32_t bs, float scale,
                       float *scores, float *o) {
    float m = -INFINITY;
    for (int32_t j = 0; j < L; j++) {
        const int64_t slot = (int64_t)bt[j / bs] * bs + (j % bs);
        const float *kv = k_pool + (slot * Hkv + kvh) * D;
        float dot = 0.0f;
#pragma omp simd reduction(+ : dot)
        for (int32_t d = 0; d < D; d++) dot += qv[d] * kv[d];
        dot *= scale;
        scores[j] = dot;
        if (dot > m) m = dot;
    }
    float sum = 0.0f;
    for (int32_t j = 0; j < L; j++) {
        scores[j] = expf(scores[j] - m);
        sum += scores[j];
    }
    memset(o, 0, sizeof(float) * D);
    for (int32_t j = 0; j < L; j++) {
        const int64_t slot = (int64_t)bt[j / bs] * bs + (j % bs);
        const float *vv = v_pool + (slot * Hkv + kvh) * D;
        const float p = scores[j];
#pragma omp simd
        for (int32_t d = 0; d < D; d++) o[d] += p * vv[d];
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
                attend_one(q + th * D, k_pool, v_pool, block_tables + (int64_t)token_seq[t] * max_blocks,
                           token_pos[t] + 1, Hkv, h / group, D, bs, scale, scores, out + th * D);
            }
            free(scores);
        }
    }
    return failed;
}
