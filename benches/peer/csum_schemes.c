/*
 * Which operations bound a 16-bit ones'-complement sum on an AVX2 core: four ways of
 * widening 32-byte vectors of words, beside the plain read loop, on the same buffers
 * (1536 B, L1-resident; 64 KiB, L2). Each prints bytes per nanosecond; divide by the
 * core's clock for bytes per cycle. Not part of `make bench`: it answered a design
 * question for the engine's AVX2 kernel (benches/results/engine-2026-11-24-2300-amd-epyc-zen1.md).
 *
 *   make -C benches/peer schemes && taskset -c 0 benches/peer/build/csum_schemes
 *
 * The sums are not checked: only the cost of each scheme's instruction mix is.
 */
#include <immintrin.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

#define LOAD(p) _mm256_load_si256((const __m256i *)(p))

static int64_t lanes32(__m256i v)
{
    int32_t t[8];
    _mm256_storeu_si256((__m256i *)t, v);
    int64_t r = 0;
    for (int i = 0; i < 8; i++)
        r += t[i];
    return r;
}

/* One load and OR per vector: what the core streams. */
__attribute__((noinline)) static int64_t read_or(const uint8_t *p, size_t n)
{
    __m256i a = _mm256_setzero_si256(), b = a, c = a, d = a;
    for (size_t i = 0; i < n; i += 128) {
        a = _mm256_or_si256(a, LOAD(p + i));
        b = _mm256_or_si256(b, LOAD(p + i + 32));
        c = _mm256_or_si256(c, LOAD(p + i + 64));
        d = _mm256_or_si256(d, LOAD(p + i + 96));
    }
    return lanes32(_mm256_or_si256(_mm256_or_si256(a, b), _mm256_or_si256(c, d)));
}

/* The engine's scheme: bias to signed (xor), vpmaddwd pairs into 32-bit lanes, add. */
__attribute__((noinline)) static int64_t madd(const uint8_t *p, size_t n)
{
    const __m256i bias = _mm256_set1_epi16(-32768), ones = _mm256_set1_epi16(1);
    __m256i a = _mm256_setzero_si256(), b = a, c = a, d = a;
#define PAIRS(x) _mm256_madd_epi16(_mm256_xor_si256(LOAD(x), bias), ones)
    for (size_t i = 0; i < n; i += 256) {
        a = _mm256_add_epi32(a, _mm256_add_epi32(PAIRS(p + i), PAIRS(p + i + 128)));
        b = _mm256_add_epi32(b, _mm256_add_epi32(PAIRS(p + i + 32), PAIRS(p + i + 160)));
        c = _mm256_add_epi32(c, _mm256_add_epi32(PAIRS(p + i + 64), PAIRS(p + i + 192)));
        d = _mm256_add_epi32(d, _mm256_add_epi32(PAIRS(p + i + 96), PAIRS(p + i + 224)));
    }
    return lanes32(_mm256_add_epi32(_mm256_add_epi32(a, b), _mm256_add_epi32(c, d)));
}

/* No multiply: each vector added whole into 32-bit lanes and its high words (shifted
 * right by 16) into others; low = whole - (high << 16). Three operations per vector. */
__attribute__((noinline)) static int64_t shift_add(const uint8_t *p, size_t n)
{
    __m256i w0 = _mm256_setzero_si256(), w1 = w0, h0 = w0, h1 = w0;
    for (size_t i = 0; i < n; i += 128) {
        __m256i v0 = LOAD(p + i), v1 = LOAD(p + i + 32), v2 = LOAD(p + i + 64), v3 = LOAD(p + i + 96);
        w0 = _mm256_add_epi32(w0, _mm256_add_epi32(v0, v1));
        h0 = _mm256_add_epi32(h0, _mm256_add_epi32(_mm256_srli_epi32(v0, 16), _mm256_srli_epi32(v1, 16)));
        w1 = _mm256_add_epi32(w1, _mm256_add_epi32(v2, v3));
        h1 = _mm256_add_epi32(h1, _mm256_add_epi32(_mm256_srli_epi32(v2, 16), _mm256_srli_epi32(v3, 16)));
    }
    return lanes32(_mm256_add_epi32(_mm256_add_epi32(w0, w1), _mm256_add_epi32(h0, h1)));
}

/* Words unpacked against zero into 32-bit lanes: two shuffles and two adds a vector. */
__attribute__((noinline)) static int64_t unpack(const uint8_t *p, size_t n)
{
    const __m256i z = _mm256_setzero_si256();
    __m256i a = z, b = z, c = z, d = z;
    for (size_t i = 0; i < n; i += 64) {
        __m256i v0 = LOAD(p + i), v1 = LOAD(p + i + 32);
        a = _mm256_add_epi32(a, _mm256_unpacklo_epi16(v0, z));
        b = _mm256_add_epi32(b, _mm256_unpackhi_epi16(v0, z));
        c = _mm256_add_epi32(c, _mm256_unpacklo_epi16(v1, z));
        d = _mm256_add_epi32(d, _mm256_unpackhi_epi16(v1, z));
    }
    return lanes32(_mm256_add_epi32(_mm256_add_epi32(a, b), _mm256_add_epi32(c, d)));
}

/* Byte sums with vpsadbw: all bytes, and the high bytes alone (word = sum + 255 high). */
__attribute__((noinline)) static int64_t sad(const uint8_t *p, size_t n)
{
    const __m256i z = _mm256_setzero_si256(), high = _mm256_set1_epi16((short)0xff00);
    __m256i all = z, hi = z;
    for (size_t i = 0; i < n; i += 64) {
        __m256i v0 = LOAD(p + i), v1 = LOAD(p + i + 32);
        all = _mm256_add_epi64(all, _mm256_add_epi64(_mm256_sad_epu8(v0, z), _mm256_sad_epu8(v1, z)));
        hi = _mm256_add_epi64(hi, _mm256_add_epi64(_mm256_sad_epu8(_mm256_and_si256(v0, high), z),
                                                   _mm256_sad_epu8(_mm256_and_si256(v1, high), z)));
    }
    return lanes32(_mm256_add_epi64(all, hi));
}

int main(void)
{
    static const struct {
        const char *name;
        int64_t (*run)(const uint8_t *, size_t);
    } schemes[] = {
        {"read (load+or)", read_or}, {"xor+vpmaddwd+add", madd}, {"shift+add (no multiply)", shift_add},
        {"unpack+add", unpack}, {"vpsadbw", sad},
    };
    const size_t sizes[] = {1536, 65536};
    uint8_t *buf = aligned_alloc(64, 65536);
    for (size_t i = 0; i < 65536; i++)
        buf[i] = (uint8_t)rand();
    printf("%-26s %9s %9s   (bytes per ns; best of 3 runs of 0.3 s)\n", "scheme", "1536 B", "64 KiB");
    for (size_t s = 0; s < sizeof schemes / sizeof schemes[0]; s++) {
        printf("%-26s", schemes[s].name);
        for (size_t z = 0; z < 2; z++) {
            double best = 0;
            for (int r = 0; r < 3; r++) {
                volatile int64_t sink = 0;
                long rounds = 0;
                double t0 = now(), t1;
                do {
                    for (int j = 0; j < 1000; j++)
                        sink += schemes[s].run(buf, sizes[z]);
                    rounds += 1000;
                    t1 = now();
                } while (t1 - t0 < 0.3);
                double rate = rounds * (double)sizes[z] / (t1 - t0) / 1e9;
                best = rate > best ? rate : best;
            }
            printf(" %9.1f", best);
        }
        printf("\n");
    }
    free(buf);
    return 0;
}
