/* The fast verifier's decoder pass: a fairseq Transformer decoder (pre- or post-norm) over a rollback-able KV cache,
 * in plain C, called through ctypes (fastdec/engine/fast_verifier.py). Compiled twice, with REAL = float and double.
 *
 * Why C: at the demo's size (128-dim, 3 layers) a PyTorch decoder step is mostly per-operator overhead; here a step
 * is a few straight loops.
 *
 * Why row-invariant: every output row (one fed position) is computed by the same loops in the same order whatever
 * the number of rows fed together, so scoring k drafted tokens in one pass gives bit for bit the rows that k
 * one-token passes give. Draft-and-verify on this backend therefore returns exactly this backend's greedy output
 * (lossless by construction, not only up to floating-point ties). Every dot product has one fixed order of
 * operations, whichever kernel computes it (see "Linear layers" below). */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#if defined(__AVX512F__)
#include <immintrin.h>
/* The mask of a 16-lane block when `left` lanes remain from its start. */
static inline __mmask16 lanes(int left) { return left >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << left) - 1); }
#endif

#ifndef REAL
#define REAL float
#endif
typedef REAL real;

enum { ACT_RELU = 0, ACT_GELU = 1, ACT_GELU_TANH = 2 };
/* per-layer weight pointers, in this order */
enum { W_QKV, B_QKV, W_O, B_O, LN_SA_W, LN_SA_B, W_CQ, B_CQ, W_CO, B_CO, LN_CA_W, LN_CA_B,
       W_FC1, B_FC1, W_FC2, B_FC2, LN_FF_W, LN_FF_B, N_LAYER_PTRS };
/* global pointers */
enum { G_EMBED, G_POS, G_LN_EMB_W, G_LN_EMB_B, G_LN_FIN_W, G_LN_FIN_B, G_OUT_W, G_OUT_B, N_GLOBAL_PTRS };
/* the packed matrices of a layer */
enum { P_QKV, P_O, P_CQ, P_CO, P_FC1, P_FC2, N_PACKED };

typedef struct Packed Packed;

typedef struct {
    int L, E, H, D, F, V, P, pre_norm, act;
    real embed_scale;
    double eps_emb, eps_fin;
    double *eps;           /* [L, 3]: self-attention, encoder-attention, feed-forward layer norms */
    const real *g[N_GLOBAL_PTRS];
    const real **w;        /* [L, N_LAYER_PTRS] */
    Packed *packed;        /* [L, N_PACKED] the layers' weight matrices, then the output projection */
    int int8;              /* linear layers in int8 (weights per output row, activations per row) */
    Packed *screen;        /* float models: an int8 copy of the output projection, to screen the argmax candidates */
    real *eps_x, *eps_s;   /* float models: the screen's error bound of output o is eps_x[o] |x|_1 + eps_s[o] sx */
    Packed *enc_kv;        /* the encoder-attention keys and values of every layer: one matrix [L * 2 * E, E_enc] */
    const real *enc_kv_b;
    real *scratch;
    size_t scratch_n;
    int8_t *qscratch;      /* the int8 activations of one linear layer's input rows */
    size_t qscratch_n;
} Model;

#if REAL_IS_DOUBLE
#define FMA fma
#else
#define FMA fmaf
#endif

/* Linear layers: y[o] = b[o] + sum_i W[o, i] x[i], every output summed in one order -- start from the bias, then a
 * fused multiply-add per i, i ascending. C fixes that order (no -ffast-math), so every kernel below gives bit for bit
 * the same y[o] for the same x, however many rows and outputs it computes together: the row-invariance this backend
 * rests on. The weights are packed in panels of PW outputs ([K][PW] each, zero-padded), so the kernels vectorise over
 * outputs -- no horizontal sums -- and stream each panel contiguously. */
#define PW 16

struct Packed {
    int O, K, panels;
    real *p;      /* [panels][K][PW] */
    int Kp;       /* int8: K rounded up to a multiple of IN_GROUP */
    int8_t *q;    /* int8: [panels][Kp / IN_GROUP][PW][IN_GROUP], the weights over their row's scale */
    real *scale;  /* int8: [panels * PW], max |W[o]| / 127 */
    int32_t *wsum; /* int8: [panels * PW], sum_i q[o, i] (the unsigned-input kernel's correction) */
};

static void free_packed(Packed *P) {
    if (P) { free(P->p); free(P->q); free(P->scale); free(P->wsum); }
}

static int pack(Packed *P, const real *W, int O, int K) {
    P->O = O; P->K = K; P->panels = (O + PW - 1) / PW;
    P->p = (real *)calloc((size_t)P->panels * K * PW, sizeof(real));
    if (!P->p) return -1;
    for (int o = 0; o < O; o++)
        for (int i = 0; i < K; i++) P->p[((size_t)(o / PW) * K + i) * PW + o % PW] = W[(size_t)o * K + i];
    return 0;
}

/* G panels x R rows: acc[g][r][l] = output (panel0 + g) * PW + l of row r. Constant G, R: the compiler keeps the
 * G * R accumulators in vector registers. */
static inline __attribute__((always_inline)) void panel_kernel(int G, int R, const Packed *P, int panel0,
                                                               const real *X, int K, const real *bias, real *Y,
                                                               size_t ldy, int col0, int ycols) {
    real acc[4][4][PW];
    for (int g = 0; g < G; g++)
        for (int l = 0; l < PW; l++) {
            const int o = (panel0 + g) * PW + l;
            const real b0 = bias && o < P->O ? bias[o] : 0;
            for (int r = 0; r < R; r++) acc[g][r][l] = b0;
        }
    const real *w = P->p + (size_t)panel0 * K * PW;
    for (int i = 0; i < K; i++) {
#pragma GCC unroll 4
        for (int g = 0; g < G; g++)
#pragma GCC unroll 4
            for (int r = 0; r < R; r++) {
                const real xi = X[(size_t)r * K + i];
                for (int l = 0; l < PW; l++) acc[g][r][l] = FMA(w[((size_t)g * K + i) * PW + l], xi, acc[g][r][l]);
            }
    }
    for (int g = 0; g < G; g++) {
        const int o0 = (panel0 + g) * PW, width = ycols - o0 < PW ? ycols - o0 : PW;
        for (int r = 0; r < R; r++)
            for (int l = 0; l < width; l++) Y[(size_t)r * ldy + (o0 - col0) + l] = acc[g][r][l];
    }
}

/* int8: y[o] = b[o] + (sum_i Wq[o, i] xq[i]) * (sx * sw[o]), the sum exact in 32-bit integers (so any order gives
 * the same), the input quantised per row (sx = max |x| / 127): again nothing depends on the rows fed with it. */
/* The int8 weights in groups of consecutive inputs per output: quads for VNNI's four products per lane, else pairs
 * (vpmaddwd, or what the compiler makes of the plain loop). */
#if defined(__AVX512VNNI__) && PW == 16
#define IN_GROUP 4
/* vpdpbusd multiplies unsigned by signed bytes: the quantised inputs are stored shifted to x + 128 (x ^ 0x80), and
 * 128 sum_i Wq[o, i] is taken off at the end -- exact integers, the same sum */
#define FLIPPED_INPUTS 0x80
#else
#define IN_GROUP 2
#define FLIPPED_INPUTS 0
#endif

#if FLIPPED_INPUTS && !REAL_IS_DOUBLE
/* The int8 epilogue of panel g (its outputs o0 .. o0+15) for one row, 16 outputs at a time, as the plain loop of
 * panel_kernel_int8 computes it: int32 -> float (round to nearest), the scales' product in float, one fused
 * multiply-add -- the same roundings, so the same values. */
typedef struct {
    __m512i corr; /* 128 sum_i Wq[o, i], the shifted inputs' excess */
    __m512 sw, b;
    __mmask16 mk; /* the outputs written */
} Int8Panel;

static inline __attribute__((always_inline)) Int8Panel int8_panel(const Packed *P, int o0, const real *bias,
                                                                  int ycols) {
    const __mmask16 in = lanes(P->O - o0);
    Int8Panel e = {_mm512_slli_epi32(_mm512_loadu_si512((const void *)(P->wsum + o0)), 7),
                   _mm512_maskz_loadu_ps(in, P->scale + o0),
                   bias ? _mm512_maskz_loadu_ps(in, bias + o0) : _mm512_setzero_ps(), lanes(ycols - o0)};
    return e;
}

static inline __attribute__((always_inline)) void int8_store(const Int8Panel *e, __m512i acc, real sx, real *y) {
    _mm512_mask_storeu_ps(y, e->mk, _mm512_fmadd_ps(_mm512_cvtepi32_ps(_mm512_sub_epi32(acc, e->corr)),
                                                    _mm512_mul_ps(_mm512_set1_ps(sx), e->sw), e->b));
}
#endif

static int pack_int8(Packed *P, const real *W, int O, int K) {
    P->O = O; P->K = K; P->panels = (O + PW - 1) / PW; P->Kp = (K + IN_GROUP - 1) / IN_GROUP * IN_GROUP;
    P->q = (int8_t *)calloc((size_t)P->panels * P->Kp * PW, 1);
    P->scale = (real *)calloc((size_t)P->panels * PW, sizeof(real));
    P->wsum = (int32_t *)calloc((size_t)P->panels * PW, sizeof(int32_t));
    if (!P->q || !P->scale || !P->wsum) return -1;
    for (int o = 0; o < O; o++) {
        real mx = 0;
        for (int i = 0; i < K; i++) mx = fabs(W[(size_t)o * K + i]) > mx ? fabs(W[(size_t)o * K + i]) : mx;
        const real sc = mx > 0 ? mx / 127 : 1;
        P->scale[o] = sc;
        for (int i = 0; i < K; i++) {
            const size_t at = (((size_t)(o / PW) * (P->Kp / IN_GROUP) + i / IN_GROUP) * PW + o % PW) * IN_GROUP +
                              i % IN_GROUP;
            P->q[at] = (int8_t)nearbyint(W[(size_t)o * K + i] / sc);
            P->wsum[o] += P->q[at];
        }
    }
    return 0;
}

static inline __attribute__((always_inline)) void panel_kernel_int8(int G, int R, const Packed *P, int panel0,
                                                                    const int8_t *X, const real *sx,
                                                                    const real *bias, real *Y, size_t ldy, int col0,
                                                                    int ycols) {
    const int Kp = P->Kp;
    int32_t acc[4][4][PW];
    const int8_t *w = P->q + (size_t)panel0 * Kp * PW;
#if defined(__AVX512VNNI__) && PW == 16
    /* four inputs per step, shifted to x + 128 (FLIPPED_INPUTS) */
    __m512i a[4][4];
    for (int g = 0; g < G; g++)
        for (int r = 0; r < R; r++) a[g][r] = _mm512_setzero_si512();
    for (int i = 0; i < Kp; i += 4) {
        __m512i wv[4]; /* each panel's weights loaded once per step, for every row */
        for (int g = 0; g < G; g++) wv[g] = _mm512_loadu_si512((const void *)(w + ((size_t)g * Kp + i) * PW));
        for (int r = 0; r < R; r++) {
            int32_t quad;
            memcpy(&quad, X + (size_t)r * Kp + i, 4);
            const __m512i xv = _mm512_set1_epi32(quad);
            for (int g = 0; g < G; g++) a[g][r] = _mm512_dpbusd_epi32(a[g][r], xv, wv[g]);
        }
    }
#if !REAL_IS_DOUBLE
    for (int g = 0; g < G; g++) {
        const int o0 = (panel0 + g) * PW;
        const Int8Panel e = int8_panel(P, o0, bias, ycols);
        for (int r = 0; r < R; r++) int8_store(&e, a[g][r], sx[r], Y + (size_t)r * ldy + (o0 - col0));
    }
    (void)acc;
    return;
#else
    for (int g = 0; g < G; g++) {
        const __m512i corr =
            _mm512_slli_epi32(_mm512_loadu_si512((const void *)(P->wsum + (size_t)(panel0 + g) * PW)), 7);
        for (int r = 0; r < R; r++) _mm512_storeu_si512((void *)acc[g][r], _mm512_sub_epi32(a[g][r], corr));
    }
#endif
#elif defined(__AVX512BW__) && PW == 16
    /* a pair of inputs per step: 16 outputs x 2 weights widened to int16, multiplied with (x[i], x[i+1]) and summed
     * in pairs into 16 int32 lanes (vpmaddwd) */
    __m512i a[4][4];
    for (int g = 0; g < G; g++)
        for (int r = 0; r < R; r++) a[g][r] = _mm512_setzero_si512();
    for (int i = 0; i < Kp; i += 2) {
        __m512i xv[4];
        for (int r = 0; r < R; r++)
            xv[r] = _mm512_set1_epi32((int32_t)((uint32_t)(uint16_t)(int16_t)X[(size_t)r * Kp + i] |
                                                ((uint32_t)(uint16_t)(int16_t)X[(size_t)r * Kp + i + 1] << 16)));
        for (int g = 0; g < G; g++) {
            const __m512i wv = _mm512_cvtepi8_epi16(_mm256_loadu_si256((const __m256i *)(w + ((size_t)g * Kp + i) * PW)));
            for (int r = 0; r < R; r++) a[g][r] = _mm512_add_epi32(a[g][r], _mm512_madd_epi16(wv, xv[r]));
        }
    }
    for (int g = 0; g < G; g++)
        for (int r = 0; r < R; r++) _mm512_storeu_si512((void *)acc[g][r], a[g][r]);
#else
    for (int g = 0; g < G; g++)
        for (int r = 0; r < R; r++)
            for (int l = 0; l < PW; l++) acc[g][r][l] = 0;
    for (int i = 0; i < Kp; i += 2)
        for (int g = 0; g < G; g++)
            for (int r = 0; r < R; r++) {
                const int32_t x0 = X[(size_t)r * Kp + i], x1 = X[(size_t)r * Kp + i + 1];
                const int8_t *wp = w + ((size_t)g * Kp + i) * PW;
                for (int l = 0; l < PW; l++) acc[g][r][l] += wp[2 * l] * x0 + wp[2 * l + 1] * x1;
            }
#endif
    for (int g = 0; g < G; g++) {
        const int o0 = (panel0 + g) * PW, width = ycols - o0 < PW ? ycols - o0 : PW;
        for (int r = 0; r < R; r++)
            for (int l = 0; l < width; l++)
                Y[(size_t)r * ldy + (o0 - col0) + l] =
                    FMA((real)acc[g][r][l], sx[r] * P->scale[o0 + l], bias ? bias[o0 + l] : 0);
    }
}

/* One block of G panels x R rows, float or int8 (xq: the rows quantised, sx their scales). */
static inline __attribute__((always_inline)) void block(int G, int R, const Packed *P, int panel, const real *X,
                                                        const int8_t *xq, const real *sx, int r, const real *bias,
                                                        real *Y, size_t ldy, int col0, int cols) {
    if (xq)
        panel_kernel_int8(G, R, P, panel, xq + (size_t)r * P->Kp, sx + r, bias, Y + (size_t)r * ldy, ldy, col0, cols);
    else
        panel_kernel(G, R, P, panel, X + (size_t)r * P->K, P->K, bias, Y + (size_t)r * ldy, ldy, col0, cols);
}

#if defined(__AVX512F__) && !REAL_IS_DOUBLE && PW == 16
#define FAST_FLOAT_KERNEL 1
/* panel_kernel's arithmetic with explicit registers: each input step loads a panel's 16 weights once into a register
 * and multiplies them into every row (the compiler, left alone, reloads them from memory for every row: one load per
 * FMA, which is what the core can issue). Up to 4 panels x 6 rows: 24 accumulators, 4 weight registers and a
 * broadcast of the 32 a core has. Each output: the bias, then one FMA per input in ascending order -- the same. */
static inline __attribute__((always_inline)) void panel_kernel_f32(int G, int R, const Packed *P, int panel0,
                                                                   const float *X, int K, const float *bias, float *Y,
                                                                   size_t ldy, int col0, int ycols) {
    __m512 acc[4][6];
    for (int g = 0; g < G; g++) {
        const int o0 = (panel0 + g) * PW;
        const __m512 b = bias ? _mm512_maskz_loadu_ps(lanes(P->O - o0), bias + o0) : _mm512_setzero_ps();
        for (int r = 0; r < R; r++) acc[g][r] = b;
    }
    const float *w = P->p + (size_t)panel0 * K * PW;
    for (int i = 0; i < K; i++) {
        __m512 wv[4];
        for (int g = 0; g < G; g++) wv[g] = _mm512_loadu_ps(w + ((size_t)g * K + i) * PW);
        for (int r = 0; r < R; r++) {
            const __m512 xv = _mm512_set1_ps(X[(size_t)r * K + i]);
            for (int g = 0; g < G; g++) acc[g][r] = _mm512_fmadd_ps(wv[g], xv, acc[g][r]);
        }
    }
    for (int g = 0; g < G; g++) {
        const int o0 = (panel0 + g) * PW;
        const __mmask16 mk = lanes(ycols - o0);
        for (int r = 0; r < R; r++) _mm512_mask_storeu_ps(Y + (size_t)r * ldy + (o0 - col0), mk, acc[g][r]);
    }
}

/* G panels over the rows r0 .. n-1: blocks of 6 rows, then the remainder in one block. */
static inline __attribute__((always_inline)) void panel_rows_f32(int G, const Packed *P, int pn, const float *X,
                                                                 int n, const float *bias, float *Y, size_t ldy,
                                                                 int col0, int cols) {
    const int K = P->K;
    int r = 0;
    for (; r + 6 <= n; r += 6) panel_kernel_f32(G, 6, P, pn, X + (size_t)r * K, K, bias, Y + (size_t)r * ldy, ldy, col0, cols);
    const float *x = X + (size_t)r * K;
    float *y = Y + (size_t)r * ldy;
    switch (n - r) {
    case 1: panel_kernel_f32(G, 1, P, pn, x, K, bias, y, ldy, col0, cols); break;
    case 2: panel_kernel_f32(G, 2, P, pn, x, K, bias, y, ldy, col0, cols); break;
    case 3: panel_kernel_f32(G, 3, P, pn, x, K, bias, y, ldy, col0, cols); break;
    case 4: panel_kernel_f32(G, 4, P, pn, x, K, bias, y, ldy, col0, cols); break;
    case 5: panel_kernel_f32(G, 5, P, pn, x, K, bias, y, ldy, col0, cols); break;
    default: break;
    }
}
#endif

#if FLIPPED_INPUTS && !REAL_IS_DOUBLE
#define FAST_INT8_KERNEL 1
/* 4 int8 panels x R <= 4 rows with the accumulators in named registers: held in an array (panel_kernel_int8), GCC
 * copies them between registers at every step (a quarter to a third of the block's samples). The same integer sums
 * and epilogue as panel_kernel_int8, so the same values. */
#define I8_ROW_DECL(r) __m512i a0##r = zero, a1##r = zero, a2##r = zero, a3##r = zero;
/* acc += the products of the unsigned bytes of x and the signed bytes of w, four to a lane (_mm512_dpbusd_epi32):
 * written as the instruction itself, with the accumulator tied in place. From the intrinsic, GCC 12 copied all 16
 * accumulators to other registers and back at every step (32 moves and a spill beside 16 vpdpbusd), and the int8
 * blocks ran at 40 % of the instruction's rate. The same instruction, so the same exact sums. */
#define DPBUSD(acc, x, w) __asm__("vpdpbusd %2, %1, %0" : "+v"(acc) : "v"(x), "v"(w))
#define I8_ROW_STEP(r)                                                                                                \
    if (R > r) {                                                                                                      \
        int32_t quad;                                                                                                 \
        memcpy(&quad, X + (size_t)r * Kp + i, 4);                                                                     \
        const __m512i xv = _mm512_set1_epi32(quad);                                                                   \
        DPBUSD(a0##r, xv, w0); DPBUSD(a1##r, xv, w1); DPBUSD(a2##r, xv, w2); DPBUSD(a3##r, xv, w3);                   \
    }
#define I8_STORE(g, r) int8_store(&e[g], a##g##r, sx[r], Y + (size_t)r * ldy + (o0 + g * PW - col0));
#define I8_ROW_STORE(r) if (R > r) { I8_STORE(0, r) I8_STORE(1, r) I8_STORE(2, r) I8_STORE(3, r) }

static inline __attribute__((always_inline)) void int8_4panels(int R, const Packed *P, int panel0, const int8_t *X,
                                                               const real *sx, const real *bias, real *Y, size_t ldy,
                                                               int col0, int ycols) {
    const int Kp = P->Kp;
    const size_t ps = (size_t)Kp * PW; /* one panel's bytes */
    const __m512i zero = _mm512_setzero_si512();
    I8_ROW_DECL(0) I8_ROW_DECL(1) I8_ROW_DECL(2) I8_ROW_DECL(3)
    const int8_t *w = P->q + (size_t)panel0 * ps;
    for (int i = 0; i < Kp; i += 4, w += 4 * PW) {
        const __m512i w0 = _mm512_loadu_si512((const void *)w), w1 = _mm512_loadu_si512((const void *)(w + ps)),
                      w2 = _mm512_loadu_si512((const void *)(w + 2 * ps)),
                      w3 = _mm512_loadu_si512((const void *)(w + 3 * ps));
        I8_ROW_STEP(0) I8_ROW_STEP(1) I8_ROW_STEP(2) I8_ROW_STEP(3)
    }
    const int o0 = panel0 * PW;
    Int8Panel e[4];
    for (int g = 0; g < 4; g++) e[g] = int8_panel(P, o0 + g * PW, bias, ycols);
    I8_ROW_STORE(0) I8_ROW_STORE(1) I8_ROW_STORE(2) I8_ROW_STORE(3)
}

/* each row count its own function: inlined into gemm's loops, the accumulators are spilled to the stack */
#define I8_BLOCK(R)                                                                                                   \
    static __attribute__((noinline)) void int8_4panels_##R(const Packed *P, int panel0, const int8_t *X,            \
                                                           const real *sx, const real *bias, real *Y, size_t ldy,    \
                                                           int col0, int ycols) {                                    \
        int8_4panels(R, P, panel0, X, sx, bias, Y, ldy, col0, ycols);                                                 \
    }
I8_BLOCK(1) I8_BLOCK(2) I8_BLOCK(3) I8_BLOCK(4)

/* G int8 panels over the rows: 4 panels in blocks of 4 rows (16 accumulators, each weight vector loaded once per
 * step for 4 rows; GCC spills 24), then the remainder in one block; a lone panel by panel_kernel_int8 (the sums are
 * exact integers: the blocking changes no value). */
static inline __attribute__((always_inline)) void panel_rows_int8(int G, const Packed *P, int pn, const int8_t *xq,
                                                                  const real *sx, int n, const real *bias, real *Y,
                                                                  size_t ldy, int col0, int cols) {
    const int Kp = P->Kp;
    if (G == 4) {
        int r = 0;
        for (; r + 4 <= n; r += 4)
            int8_4panels_4(P, pn, xq + (size_t)r * Kp, sx + r, bias, Y + (size_t)r * ldy, ldy, col0, cols);
        const int8_t *x = xq + (size_t)r * Kp;
        real *y = Y + (size_t)r * ldy;
        switch (n - r) {
        case 1: int8_4panels_1(P, pn, x, sx + r, bias, y, ldy, col0, cols); break;
        case 2: int8_4panels_2(P, pn, x, sx + r, bias, y, ldy, col0, cols); break;
        case 3: int8_4panels_3(P, pn, x, sx + r, bias, y, ldy, col0, cols); break;
        default: break;
        }
        return;
    }
    int r = 0;
    for (; r + 4 <= n; r += 4)
        panel_kernel_int8(G, 4, P, pn, xq + (size_t)r * Kp, sx + r, bias, Y + (size_t)r * ldy, ldy, col0, cols);
    for (; r < n; r++)
        panel_kernel_int8(G, 1, P, pn, xq + (size_t)r * Kp, sx + r, bias, Y + (size_t)r * ldy, ldy, col0, cols);
}
#endif

/* Y[r, o - first * PW] for rows r < n and the outputs o of panels [first, last): blocks of 4 panels x 4 rows (float
 * with AVX-512: 4 panels x 6 rows), then the edges (every block computes each output in the same order, so the edges
 * change no value). */
static void gemm(const real *X, const int8_t *xq, const real *sx, int n, const Packed *P, int first, int last,
                 const real *bias, real *Y, size_t ldy) {
    const int col0 = first * PW, cols = last * PW < P->O ? last * PW : P->O;
    int pn = first;
#ifdef FAST_FLOAT_KERNEL
    if (!xq) {
        for (; pn + 4 <= last; pn += 4) panel_rows_f32(4, P, pn, X, n, bias, Y, ldy, col0, cols);
        for (; pn < last; pn++) panel_rows_f32(1, P, pn, X, n, bias, Y, ldy, col0, cols);
        return;
    }
#endif
#ifdef FAST_INT8_KERNEL
    for (; pn + 4 <= last; pn += 4) panel_rows_int8(4, P, pn, xq, sx, n, bias, Y, ldy, col0, cols);
    for (; pn < last; pn++) panel_rows_int8(1, P, pn, xq, sx, n, bias, Y, ldy, col0, cols);
    return;
#endif
    for (; pn + 4 <= last; pn += 4) {
        int r = 0;
        for (; r + 4 <= n; r += 4) block(4, 4, P, pn, X, xq, sx, r, bias, Y, ldy, col0, cols);
        for (; r < n; r++) block(4, 1, P, pn, X, xq, sx, r, bias, Y, ldy, col0, cols);
    }
    for (; pn < last; pn++) {
        int r = 0;
        for (; r + 4 <= n; r += 4) block(1, 4, P, pn, X, xq, sx, r, bias, Y, ldy, col0, cols);
        for (; r < n; r++) block(1, 1, P, pn, X, xq, sx, r, bias, Y, ldy, col0, cols);
    }
}

/* The int8 input rows of a layer: xq [n][Kp] (zero-padded; each byte ^ FLIPPED_INPUTS), sx [n]; in m's int8
 * scratch. */
static int8_t *quantize_rows(Model *m, const real *X, int n, int K, int Kp, real **sx_out) {
    const size_t need = (size_t)n * Kp + sizeof(real) * (size_t)(n + 1);
    if (need > m->qscratch_n) {
        free(m->qscratch);
        m->qscratch = (int8_t *)malloc(need);
        m->qscratch_n = m->qscratch ? need : 0;
        if (!m->qscratch) return NULL;
    }
    real *sx = (real *)(m->qscratch + (((size_t)n * Kp + sizeof(real) - 1) / sizeof(real)) * sizeof(real));
    for (int r = 0; r < n; r++) {
        const real *x = X + (size_t)r * K;
        int8_t *q = m->qscratch + (size_t)r * Kp;
        real mx = 0;
        int i = 0;
#if defined(__AVX512F__) && !REAL_IS_DOUBLE
        /* the same values as the plain loops: a maximum in any order, an IEEE division, round to nearest even */
        __m512 mv = _mm512_setzero_ps();
        for (; i + 16 <= K; i += 16) mv = _mm512_max_ps(mv, _mm512_abs_ps(_mm512_loadu_ps(x + i)));
        mx = _mm512_reduce_max_ps(mv);
#endif
        for (; i < K; i++) mx = fabs(x[i]) > mx ? fabs(x[i]) : mx;
        sx[r] = mx > 0 ? mx / 127 : 1;
        i = 0;
#if defined(__AVX512F__) && !REAL_IS_DOUBLE
        const __m512 dv = _mm512_set1_ps(sx[r]);
        const __m128i flip = _mm_set1_epi8((char)FLIPPED_INPUTS);
        for (; i + 16 <= K; i += 16)
            _mm_storeu_si128((__m128i *)(q + i), _mm_xor_si128(flip, _mm512_cvtepi32_epi8(_mm512_cvtps_epi32(
                _mm512_roundscale_ps(_mm512_div_ps(_mm512_loadu_ps(x + i), dv),
                                     _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC)))));
#endif
        for (; i < K; i++) q[i] = (int8_t)((uint8_t)(int8_t)nearbyint(x[i] / sx[r]) ^ FLIPPED_INPUTS);
        for (i = K; i < Kp; i++) q[i] = (int8_t)FLIPPED_INPUTS;
    }
    *sx_out = sx;
    return m->qscratch;
}

/* Y[r, o - first * PW] = the linear layer P on rows X for the outputs of panels [first, last), float or int8. */
static int project(Model *m, const real *X, int n, const Packed *P, int first, int last, const real *bias, real *Y,
                   size_t ldy) {
    real *sx = NULL;
    const int8_t *xq = NULL;
    if (P->q && !(xq = quantize_rows(m, X, n, P->K, P->Kp, &sx))) return -1;
    gemm(X, xq, sx, n, P, first, last, bias, Y, ldy);
    return 0;
}

static int linear(Model *m, const real *in, int n, const Packed *P, const real *b, real *out) {
    return project(m, in, n, P, 0, P->panels, b, out, P->O);
}

static void layer_norm(real *x, int E, const real *w, const real *b, double eps) {
#if defined(__AVX512F__) && !REAL_IS_DOUBLE
    if (E % 16 == 0) { /* the loops below 16 inputs at a time: the sums in double in 8 lanes, the rest the same */
        __m512d s0 = _mm512_setzero_pd(), s1 = s0;
        for (int i = 0; i < E; i += 16) {
            const __m512 v = _mm512_loadu_ps(x + i);
            s0 = _mm512_add_pd(s0, _mm512_cvtps_pd(_mm512_castps512_ps256(v)));
            s1 = _mm512_add_pd(s1, _mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1))));
        }
        const __m512d mv = _mm512_set1_pd(_mm512_reduce_add_pd(_mm512_add_pd(s0, s1)) / E);
        __m512d v0 = _mm512_setzero_pd(), v1 = v0;
        for (int i = 0; i < E; i += 16) {
            const __m512 v = _mm512_loadu_ps(x + i);
            const __m512d d0 = _mm512_sub_pd(_mm512_cvtps_pd(_mm512_castps512_ps256(v)), mv),
                          d1 = _mm512_sub_pd(_mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1))), mv);
            v0 = _mm512_add_pd(v0, _mm512_mul_pd(d0, d0));
            v1 = _mm512_add_pd(v1, _mm512_mul_pd(d1, d1));
        }
        const double var = _mm512_reduce_add_pd(_mm512_add_pd(v0, v1)) / E;
        const __m512d iv = _mm512_set1_pd((double)(real)(1.0 / sqrt(var + eps)));
        for (int i = 0; i < E; i += 16) {
            const __m512 v = _mm512_loadu_ps(x + i);
            const __m256 lo = _mm512_cvtpd_ps(_mm512_mul_pd(_mm512_sub_pd(_mm512_cvtps_pd(_mm512_castps512_ps256(v)), mv), iv)),
                         hi = _mm512_cvtpd_ps(_mm512_mul_pd(_mm512_sub_pd(_mm512_cvtps_pd(_mm256_castpd_ps(
                             _mm512_extractf64x4_pd(_mm512_castps_pd(v), 1))), mv), iv));
            const __m512 y = _mm512_castpd_ps(_mm512_insertf64x4(_mm512_castps_pd(_mm512_castps256_ps512(lo)),
                                                                 _mm256_castps_pd(hi), 1));
            _mm512_storeu_ps(x + i, _mm512_add_ps(_mm512_mul_ps(y, _mm512_loadu_ps(w + i)), _mm512_loadu_ps(b + i)));
        }
        return;
    }
#endif
    double mean = 0, var = 0;
    for (int i = 0; i < E; i++) mean += x[i];
    mean /= E;
    for (int i = 0; i < E; i++) { double d = x[i] - mean; var += d * d; }
    var /= E;
    real inv = (real)(1.0 / sqrt(var + eps));
    for (int i = 0; i < E; i++) x[i] = (real)((x[i] - mean) * inv) * w[i] + b[i];
}

static void layer_norm_rows(const real *x, real *y, int n, int E, const real *w, const real *b, double eps) {
    if (y != x) memcpy(y, x, sizeof(real) * (size_t)n * E);
    for (int r = 0; r < n; r++) layer_norm(y + (size_t)r * E, E, w, b, eps);
}

static real activation(real x, int act) {
    switch (act) {
    case ACT_GELU: return (real)(0.5 * x * (1.0 + erf(x / sqrt(2.0))));
    case ACT_GELU_TANH: return (real)(0.5 * x * (1.0 + tanh(0.7978845608 * (x + 0.044715 * x * x * x))));
    default: return x > 0 ? x : 0;
    }
}

/* x[i] = activation(x[i]) for i < n; ReLU as max(x, 0) 16 at a time (the same values: +0 for -0 and NaN). */
static void activate(real *x, size_t n, int act) {
    size_t i = 0;
    if (act == ACT_RELU) {
#if defined(__AVX512F__) && !REAL_IS_DOUBLE
        const __m512 zero = _mm512_setzero_ps();
        for (; i + 16 <= n; i += 16) _mm512_storeu_ps(x + i, _mm512_max_ps(_mm512_loadu_ps(x + i), zero));
#endif
        for (; i < n; i++) x[i] = x[i] > 0 ? x[i] : 0;
        return;
    }
    for (; i < n; i++) x[i] = activation(x[i], act);
}

#if REAL_IS_DOUBLE
static inline real exp_real(real x) { return exp(x); }
#else
/* expf for x <= 0 (softmax after subtracting the maximum), vectorisable: x = n ln2 + r with |r| <= ln2 / 2, a
 * degree-6 polynomial of r (relative error ~2e-7), times 2^n put together from its bits. */
static inline float exp_real(float x) {
    if (x < -87.0f) return 0.0f;
    const float n = nearbyintf(x * 1.44269504f);
    const float r = FMA(n, -0.693145752f, FMA(n, -1.42860677e-6f, x));
    float p = 1.38888889e-3f;
    p = FMA(p, r, 8.33333333e-3f);
    p = FMA(p, r, 4.16666667e-2f);
    p = FMA(p, r, 1.66666667e-1f);
    p = FMA(p, r, 0.5f);
    p = FMA(p, r, 1.0f);
    p = FMA(p, r, 1.0f);
    union { float f; int32_t i; } scale = {.i = ((int32_t)n + 127) << 23};
    return p * scale.f;
}
#endif

/* Attention of one row: for each of its heads, softmax(q . keys) values -> out[D], over T positions. Kt: the keys
 * transposed, [D][ldk] (row d holds dimension d of every position, so the T scores are computed side by side, each as
 * a sum over d in ascending order); V: [T][D]; q already scaled; p: [T] scratch a head. */
#if defined(__AVX512F__) && !REAL_IS_DOUBLE
/* query t's accumulator of head g and block b (Q G NB <= 16). The second query is written out beside the first
 * (Q - 1: the first again where Q = 1, never executed): with each block's loads in an array and a loop over the
 * queries, GCC 12 kept the accumulators on the stack, a store at every multiply-add. */
#define ACC(t, g, b) acc[((t) * G + (g)) * NB + (b)]
/* ACC(t, g, b) += a_t x[16 b ..] over the NB masked blocks of x, for Q = 1 or 2 queries (a1: the second's): each
 * block loaded once for both */
static inline __attribute__((always_inline)) void fmadd_blocks(int Q, int G, int NB, __m512 *acc, int g, __m512 a0,
                                                               __m512 a1, const real *x, const __mmask16 *mk) {
    for (int b = 0; b < NB; b++) {
        const __m512 xb = _mm512_maskz_loadu_ps(mk[b], x + 16 * b);
        ACC(0, g, b) = _mm512_fmadd_ps(a0, xb, ACC(0, g, b));
        if (Q == 2) ACC(Q - 1, g, b) = _mm512_fmadd_ps(a1, xb, ACC(Q - 1, g, b));
    }
}

/* Q rows of one segment (Q = 1 or 2) and G of their heads at once (Q, G, NB constant): query t of head g reads
 * q + t qs + g D, keys Kt + g kstride, values V + g kstride and its scores p + t ps + g T (T: the longest query's
 * positions, the scores' row length), and writes out + t os + g D. The accumulators stay in registers (plain loops
 * keep them in memory: a store-to-load chain per input). Each query's and head's operations are those of the plain
 * loops below, in their order, so every value is theirs bit for bit: G heads keep G independent chains in flight where
 * a head alone waits on one, and two queries read each key and value block once for both (the loads, not the
 * multiply-adds, bound a query alone). p[t ps + g T + j0 + l] = sum_d q[d] k[d][j0 + l], NB blocks of 16 positions: */
static inline __attribute__((always_inline)) void scores_heads(int Q, int G, int NB, const real *q, size_t qs,
                                                               const real *Kt, size_t ldk, size_t kstride, int j0,
                                                               int T, int D, real *p, size_t ps) {
    __m512 acc[16];
    __mmask16 mk[4];
    for (int b = 0; b < NB; b++) mk[b] = lanes(T - j0 - 16 * b);
    for (int i = 0; i < Q * G * NB; i++) acc[i] = _mm512_setzero_ps();
    for (int d = 0; d < D; d++)
        for (int g = 0; g < G; g++)
            fmadd_blocks(Q, G, NB, acc, g, _mm512_set1_ps(q[(size_t)g * D + d]),
                         _mm512_set1_ps(q[(Q - 1) * qs + (size_t)g * D + d]), Kt + g * kstride + (size_t)d * ldk + j0,
                         mk);
    for (int t = 0; t < Q; t++)
        for (int g = 0; g < G; g++)
            for (int b = 0; b < NB; b++)
                _mm512_mask_storeu_ps(p + t * ps + (size_t)g * T + j0 + 16 * b, mk[b], ACC(t, g, b));
}

/* The heads' softmax weights in place over the first n of each head's T scores (p: [G][T]) and inv[g] = 1 / head
 * g's sum: the maximum (exact in any order: taken 16 at a time), the exponentials, and the sums, each in ascending j,
 * the heads' side by side. */
static inline __attribute__((always_inline)) void softmax_heads(int G, real *p, int T, int n, real *inv) {
    real sum[4];
    for (int g = 0; g < G; g++) {
        real *pg = p + (size_t)g * T;
        __m512 mv = _mm512_set1_ps(-INFINITY);
        for (int j = 0; j < n; j += 16) mv = _mm512_max_ps(_mm512_mask_loadu_ps(mv, lanes(n - j), pg + j), mv);
        const real m = _mm512_reduce_max_ps(mv);
        for (int j = 0; j < n; j++) pg[j] = exp_real(pg[j] - m);
        sum[g] = 0;
    }
    for (int j = 0; j < n; j++)
        for (int g = 0; g < G; g++) sum[g] += p[(size_t)g * T + j];
    for (int g = 0; g < G; g++) inv[g] = 1 / sum[g];
}

/* out[t os + g D + d0 + l] = inv[4 t + g] sum_j p[t ps + g T + j] V[j][d0 + l] for NB blocks of 16 dimensions, over
 * j < n0 for the first query and j < T for a second: */
static inline __attribute__((always_inline)) void values_heads(int Q, int G, int NB, const real *p, size_t ps,
                                                               const real *V, size_t kstride, int T, int n0, int D,
                                                               int d0, const real *inv, real *out, size_t os) {
    __m512 acc[16];
    __mmask16 mk[4];
    for (int b = 0; b < NB; b++) mk[b] = lanes(D - d0 - 16 * b);
    for (int i = 0; i < Q * G * NB; i++) acc[i] = _mm512_setzero_ps();
    for (int j = 0; j < n0; j++)
        for (int g = 0; g < G; g++)
            fmadd_blocks(Q, G, NB, acc, g, _mm512_set1_ps(p[(size_t)g * T + j]),
                         _mm512_set1_ps(p[(Q - 1) * ps + (size_t)g * T + j]), V + g * kstride + (size_t)j * D + d0, mk);
    if (Q == 2) /* the second query's positions past the first's (its accumulators: the array's second half) */
        for (int j = n0; j < T; j++)
            for (int g = 0; g < G; g++) {
                const __m512 pj = _mm512_set1_ps(p[ps + (size_t)g * T + j]);
                fmadd_blocks(1, G, NB, acc + G * NB, g, pj, pj, V + g * kstride + (size_t)j * D + d0, mk);
            }
    for (int t = 0; t < Q; t++)
        for (int g = 0; g < G; g++) {
            const __m512 iv = _mm512_set1_ps(inv[4 * t + g]);
            for (int b = 0; b < NB; b++)
                _mm512_mask_storeu_ps(out + t * os + (size_t)g * D + d0 + 16 * b, mk[b],
                                      _mm512_mul_ps(ACC(t, g, b), iv));
        }
}

#undef ACC

/* KERNEL(Q, G, NB, ...) for NB = blocks of 16: 1 .. 4 for one query, 1 .. 2 for two (the registers hold no more) */
#define BY_BLOCKS(KERNEL, Q, G, blocks, ...)                                                                          \
    switch (Q == 2 && (blocks) > 2 ? 2 : (blocks)) {                                                                   \
    case 1: KERNEL(Q, G, 1, __VA_ARGS__); break;                                                                       \
    case 2: KERNEL(Q, G, 2, __VA_ARGS__); break;                                                                       \
    case 3: if (Q == 1) KERNEL(1, G, 3, __VA_ARGS__); break;                                                           \
    default: if (Q == 1) KERNEL(1, G, 4, __VA_ARGS__);                                                                 \
    }

/* Q queries (rows q and q + qs: T0 and T positions, T0 <= T; one query: T0 = T) of G heads; p: [2][4][T] scratch. */
static inline __attribute__((always_inline)) void attend_group(int Q, int G, const real *q, size_t qs, const real *Kt,
                                                               size_t ldk, const real *V, int T0, int T, int D,
                                                               real *p, real *out, size_t os) {
    const size_t kstride = (size_t)D * ldk, ps = (size_t)4 * T;
    const int span = Q == 1 ? 64 : 32; /* positions and dimensions a call of the kernels takes */
    real inv[8];
    for (int j0 = 0; j0 < T; j0 += span) {
        const int blocks = ((T - j0 < span ? T - j0 : span) + 15) / 16;
        BY_BLOCKS(scores_heads, Q, G, blocks, q, qs, Kt, ldk, kstride, j0, T, D, p, ps)
    }
    softmax_heads(G, p, T, Q == 1 ? T : T0, inv);
    if (Q == 2) softmax_heads(G, p + ps, T, T, inv + 4);
    for (int d0 = 0; d0 < D; d0 += span) {
        const int blocks = ((D - d0 < span ? D - d0 : span) + 15) / 16;
        BY_BLOCKS(values_heads, Q, G, blocks, p, ps, V, kstride, T, Q == 1 ? T : T0, D, d0, inv, out, os)
    }
}
#endif

/* One head. */
static void attend(const real *q, const real *Kt, size_t ldk, const real *V, int T, int D, real *p, real *out) {
#if defined(__AVX512F__) && !REAL_IS_DOUBLE
    attend_group(1, 1, q, 0, Kt, ldk, V, T, T, D, p, out, 0);
#else
    for (int j = 0; j < T; j++) p[j] = 0;
    for (int d = 0; d < D; d++) {
        const real qd = q[d], *k = Kt + (size_t)d * ldk;
        for (int j = 0; j < T; j++) p[j] = FMA(qd, k[j], p[j]);
    }
    real m = -INFINITY;
    for (int j = 0; j < T; j++) m = p[j] > m ? p[j] : m;
    for (int j = 0; j < T; j++) p[j] = exp_real(p[j] - m);
    real sum = 0;
    for (int j = 0; j < T; j++) sum += p[j];
    const real inv = 1 / sum;
    for (int d = 0; d < D; d++) out[d] = 0;
    for (int j = 0; j < T; j++) {
        const real pj = p[j], *v = V + (size_t)j * D;
        for (int d = 0; d < D; d++) out[d] = FMA(pj, v[d], out[d]);
    }
    for (int d = 0; d < D; d++) out[d] *= inv;
#endif
}

/* Every head hh < H of one row: attend on q + hh D, keys Kt + hh D ldk, values V + hh ldk D (the layouts of a cache
 * and of an encoder output: [H][D][ldk], [H][ldk][D]), into out + hh D; p: [4 T] scratch. With AVX-512
 * four heads at a time (attend_group), bit for bit attend head by head. */
static void attend_heads(int H, const real *q, const real *Kt, size_t ldk, const real *V, int T, int D, real *p,
                         real *out) {
    const size_t kstride = (size_t)D * ldk;
    int hh = 0;
#if defined(__AVX512F__) && !REAL_IS_DOUBLE
    for (; hh + 4 <= H; hh += 4)
        attend_group(1, 4, q + (size_t)hh * D, 0, Kt + hh * kstride, ldk, V + hh * kstride, T, T, D, p,
                     out + (size_t)hh * D, 0);
#endif
    for (; hh < H; hh++)
        attend(q + (size_t)hh * D, Kt + hh * kstride, ldk, V + hh * kstride, T, D, p, out + (size_t)hh * D);
}

/* attend_heads on two rows of one segment, q and q + qs (into out and out + os), over T0 and T positions (T0 <= T):
 * with AVX-512 their groups of four heads read the keys and values once for both, every value bit for bit that of
 * attend_heads row by row; p: [8 T] scratch. */
static void attend_two_rows(int H, const real *q, size_t qs, const real *Kt, size_t ldk, const real *V, int T0, int T,
                            int D, real *p, real *out, size_t os) {
    const size_t kstride = (size_t)D * ldk;
    int hh = 0;
#if defined(__AVX512F__) && !REAL_IS_DOUBLE
    for (; hh + 4 <= H; hh += 4)
        attend_group(2, 4, q + (size_t)hh * D, qs, Kt + hh * kstride, ldk, V + hh * kstride, T0, T, D, p,
                     out + (size_t)hh * D, os);
#endif
    for (; hh < H; hh++) {
        const real *Kh = Kt + hh * kstride, *Vh = V + hh * kstride;
        attend(q + (size_t)hh * D, Kh, ldk, Vh, T0, D, p, out + (size_t)hh * D);
        attend(q + qs + (size_t)hh * D, Kh, ldk, Vh, T, D, p, out + os + (size_t)hh * D);
    }
}

static real *scratch(Model *m, size_t n) {
    if (n > m->scratch_n) {
        free(m->scratch);
        m->scratch = (real *)malloc(sizeof(real) * n);
        m->scratch_n = m->scratch ? n : 0;
    }
    return m->scratch;
}

void *fd_new(const int *ints, const double *reals, const void **global_ptrs, const void **layer_ptrs) {
    Model *m = (Model *)calloc(1, sizeof(Model));
    if (!m) return NULL;
    m->L = ints[0]; m->E = ints[1]; m->H = ints[2]; m->F = ints[3]; m->V = ints[4]; m->P = ints[5];
    m->pre_norm = ints[6]; m->act = ints[7]; m->int8 = ints[8];
    m->D = m->E / m->H;
    m->embed_scale = (real)reals[0];
    m->eps_emb = reals[1]; m->eps_fin = reals[2];
    m->eps = (double *)malloc(sizeof(double) * 3 * m->L);
    m->w = (const real **)malloc(sizeof(real *) * N_LAYER_PTRS * m->L);
    if (!m->eps || !m->w) return NULL;
    memcpy(m->eps, reals + 3, sizeof(double) * 3 * m->L);
    memcpy(m->g, global_ptrs, sizeof(void *) * N_GLOBAL_PTRS);
    memcpy(m->w, layer_ptrs, sizeof(void *) * N_LAYER_PTRS * m->L);
    m->packed = (Packed *)calloc((size_t)N_PACKED * m->L + 1, sizeof(Packed));
    if (!m->packed) return NULL;
    const int E = m->E, F = m->F;
    for (int l = 0; l < m->L; l++) {
        const real **w = m->w + (size_t)l * N_LAYER_PTRS;
        Packed *P = m->packed + (size_t)l * N_PACKED;
        int (*pk)(Packed *, const real *, int, int) = m->int8 ? pack_int8 : pack;
        int bad = pk(&P[P_QKV], w[W_QKV], 3 * E, E) || pk(&P[P_O], w[W_O], E, E) || pk(&P[P_FC1], w[W_FC1], F, E) ||
                  pk(&P[P_FC2], w[W_FC2], E, F);
        if (w[W_CQ]) bad = bad || pk(&P[P_CQ], w[W_CQ], E, E) || pk(&P[P_CO], w[W_CO], E, E);
        if (bad) return NULL;
    }
    if (m->g[G_OUT_W] &&
        (m->int8 ? pack_int8 : pack)(&m->packed[(size_t)N_PACKED * m->L], m->g[G_OUT_W], m->V, E)) return NULL;
    if (m->g[G_OUT_W] && !m->int8) {
        m->screen = (Packed *)calloc(1, sizeof(Packed));
        m->eps_x = (real *)calloc((size_t)m->V, sizeof(real));
        m->eps_s = (real *)calloc((size_t)m->V, sizeof(real));
        if (!m->screen || !m->eps_x || !m->eps_s || pack_int8(m->screen, m->g[G_OUT_W], m->V, E)) return NULL;
        for (int o = 0; o < m->V; o++) {
            double l1 = 0, so = m->screen->scale[o];
            for (int i = 0; i < E; i++) l1 += fabs((double)m->g[G_OUT_W][(size_t)o * E + i]);
            m->eps_x[o] = (real)(0.505 * so);
            m->eps_s[o] = (real)(0.505 * (l1 + 0.5 * E * so));
        }
    }
    return m;
}

void fd_free(void *handle) {
    Model *m = (Model *)handle;
    if (!m) return;
    if (m->packed)
        for (int i = 0; i <= N_PACKED * m->L; i++) {
            free_packed(&m->packed[i]);
        }
    free_packed(m->screen);
    free_packed(m->enc_kv);
    free(m->enc_kv);
    free(m->screen); free(m->eps_x); free(m->eps_s);
    free(m->packed); free(m->eps); free(m->w); free(m->scratch); free(m->qscratch); free(m);
}

/* The decoder (or encoder) layers over B segments of fed tokens, packed one after the other (N in all): segment b
 * holds n[b] tokens at positions t0[b] .. t0[b]+n[b]-1 of its own sentence -- its own self-attention cache kc[b],
 * vc[b] of cap[b] positions and its own encoder-attention keys/values enck[b], encv[b] of S[b] source positions.
 * The linear layers run over all N rows together (their weights streamed once per pass, whatever B); the attention of
 * a row reads only its segment's cache and encoder output. Every row is computed by the same loops in the same order
 * as when its segment is fed alone (B = 1, fd_forward): the batched pass is row-invariant too. */
static int forward_rows(Model *m, const int64_t *tokens, int B, const int *n, const int *t0, real *const *kc,
                        real *const *vc, const int *cap, const real *const *enck, const real *const *encv, const int *S,
                        int causal, int bidir_tail, real *hidden) {
    const int E = m->E, H = m->H, D = m->D, F = m->F;
    int N = 0, T = 0;
    for (int b = 0; b < B; b++) {
        if (n[b] < 0) return -3;
        N += n[b];
        const int t1 = t0[b] + n[b], s = enck ? S[b] : 0;
        T = t1 > T ? t1 : T;
        T = s > T ? s : T;
    }
    if (N == 0) return 0;
    const int wide = F > 3 * E ? F : 3 * E;
    /* scratch: h [N, E] (normed input / projection output), big [N, wide] (qkv or the FFN's inner layer), att [N, E]
     * (attention output), p [8, T] (the attention weights of four heads of two rows) */
    real *h = scratch(m, (size_t)N * (2 * E + wide) + (size_t)8 * T);
    if (!h) return -1;
    real *x = hidden, *big = h + (size_t)N * E, *att = big + (size_t)N * wide, *p = att + (size_t)N * E;
    for (int r = 0; r < N; r++)
        if (tokens[r] < 0 || tokens[r] >= m->V) return -2;
    const real *embed = m->g[G_EMBED], *pos = m->g[G_POS];
    for (int b = 0, r = 0; b < B; b++)
        for (int i = 0; i < n[b]; i++, r++) {
            real *xr = x + (size_t)r * E;
            const real *e = embed + (size_t)tokens[r] * E;
            for (int c = 0; c < E; c++) xr[c] = e[c] * m->embed_scale;
            if (pos) { const real *pr = pos + (size_t)(t0[b] + i) * E; for (int c = 0; c < E; c++) xr[c] += pr[c]; }
            if (m->g[G_LN_EMB_W]) layer_norm(xr, E, m->g[G_LN_EMB_W], m->g[G_LN_EMB_B], m->eps_emb);
        }
    for (int l = 0; l < m->L; l++) {
        const real **w = m->w + (size_t)l * N_LAYER_PTRS;
        const double *eps = m->eps + 3 * l;
        const Packed *P = m->packed + (size_t)l * N_PACKED;
        /* self-attention */
        if (m->pre_norm) layer_norm_rows(x, h, N, E, w[LN_SA_W], w[LN_SA_B], eps[0]);
        if (linear(m, m->pre_norm ? h : x, N, &P[P_QKV], w[B_QKV], big)) return -1;
        for (int b = 0, r0 = 0; b < B; r0 += n[b], b++) {
            const int nb = n[b], tb = t0[b], t1 = tb + nb, cb = cap[b];
            real *K = kc[b] + (size_t)l * H * cb * D, *Vc = vc[b] + (size_t)l * H * cb * D;
            for (int i = 0; i < nb; i++)
                for (int hh = 0; hh < H; hh++) {
                    const real *qkv = big + (size_t)(r0 + i) * 3 * E;
                    for (int d = 0; d < D; d++) K[((size_t)hh * D + d) * cb + tb + i] = qkv[E + hh * D + d];
                    memcpy(Vc + ((size_t)hh * cb + tb + i) * D, qkv + 2 * E + hh * D, sizeof(real) * D);
                }
            for (int i = 0; i < nb; i += 2) { /* two rows at a time (the second's positions: as many or one more) */
                const int upto = (!causal || i >= nb - bidir_tail) ? t1 : tb + i + 1;
                const real *q = big + (size_t)(r0 + i) * 3 * E;
                real *out = att + (size_t)(r0 + i) * E;
                if (i + 1 < nb)
                    attend_two_rows(H, q, 3 * E, K, cb, Vc, upto, (!causal || i + 1 >= nb - bidir_tail) ? t1 : upto + 1,
                                    D, p, out, E);
                else
                    attend_heads(H, q, K, cb, Vc, upto, D, p, out);
            }
        }
        if (linear(m, att, N, &P[P_O], w[B_O], h)) return -1;
        for (size_t i = 0; i < (size_t)N * E; i++) x[i] += h[i];
        if (!m->pre_norm) layer_norm_rows(x, x, N, E, w[LN_SA_W], w[LN_SA_B], eps[0]);
        if (enck) { /* encoder attention (an encoder layer has none) */
            if (m->pre_norm) layer_norm_rows(x, h, N, E, w[LN_CA_W], w[LN_CA_B], eps[1]);
            if (linear(m, m->pre_norm ? h : x, N, &P[P_CQ], w[B_CQ], big)) return -1;
            for (int b = 0, r0 = 0; b < B; r0 += n[b], b++) {
                const int Sb = S[b];
                const real *EK = enck[b] + (size_t)l * H * D * Sb, *EV = encv[b] + (size_t)l * H * Sb * D;
                for (int i = 0; i < n[b]; i += 2) {
                    const real *q = big + (size_t)(r0 + i) * E;
                    real *out = att + (size_t)(r0 + i) * E;
                    if (i + 1 < n[b])
                        attend_two_rows(H, q, E, EK, Sb, EV, Sb, Sb, D, p, out, E);
                    else
                        attend_heads(H, q, EK, Sb, EV, Sb, D, p, out);
                }
            }
            if (linear(m, att, N, &P[P_CO], w[B_CO], h)) return -1;
            for (size_t i = 0; i < (size_t)N * E; i++) x[i] += h[i];
            if (!m->pre_norm) layer_norm_rows(x, x, N, E, w[LN_CA_W], w[LN_CA_B], eps[1]);
        }
        /* feed-forward */
        if (m->pre_norm) layer_norm_rows(x, h, N, E, w[LN_FF_W], w[LN_FF_B], eps[2]);
        if (linear(m, m->pre_norm ? h : x, N, &P[P_FC1], w[B_FC1], big)) return -1;
        activate(big, (size_t)N * F, m->act);
        if (linear(m, big, N, &P[P_FC2], w[B_FC2], h)) return -1;
        for (size_t i = 0; i < (size_t)N * E; i++) x[i] += h[i];
        if (!m->pre_norm) layer_norm_rows(x, x, N, E, w[LN_FF_W], w[LN_FF_B], eps[2]);
    }
    if (m->g[G_LN_FIN_W]) layer_norm_rows(x, x, N, E, m->g[G_LN_FIN_W], m->g[G_LN_FIN_B], m->eps_fin);
    return 0;
}

/* Feed n tokens at positions t0 .. t0+n-1 and append their keys/values to the cache.
 * kc: [L, H, D, cap] (keys transposed), vc: [L, H, cap, D]; enck: [L, H, D, S], encv: [L, H, S, D] (the
 * encoder-attention keys/values, projected once per sentence).
 * causal = 0: every new row attends to every position < t0+n (a bidirectional decoder); bidir_tail = m: the last m
 * rows do (the masked block of a prefix-causal drafter). hidden: [n, E], the final decoder features.
 * enck = NULL runs encoder layers (self-attention and feed-forward only; with causal = 0 and kc, vc of cap >= n the
 * Transformer encoder of one sentence).
 * Returns 0; -1 when the scratch memory cannot be allocated, -2 for a token id outside the vocabulary. */
int fd_forward(void *handle, const int64_t *tokens, int n, int t0, real *kc, real *vc, int cap, const real *enck,
               const real *encv, int S, int causal, int bidir_tail, real *hidden) {
    return forward_rows((Model *)handle, tokens, 1, &n, &t0, &kc, &vc, &cap, enck ? &enck : NULL,
                        encv ? &encv : NULL, &S, causal, bidir_tail, hidden);
}

/* The batched decoder pass (causal): B sentences, sentence b feeding n[b] >= 0 tokens at positions t0[b] .. of its
 * own cache kc[b] [L, H, D, cap[b]], vc[b] [L, H, cap[b], D], attending to its own encoder output enck[b]
 * [L, H, D, S[b]], encv[b] [L, H, S[b], D]. tokens: the sum of n tokens, sentence after sentence; hidden: their final
 * features [sum n, E] in the same order -- each sentence's rows bit for bit those of fd_forward on it alone.
 * Returns as fd_forward (-3: a negative n). */
int fd_forward_batch(void *handle, const int64_t *tokens, const int *n, int B, const int *t0, real *const *kc,
                     real *const *vc, const int *cap, const real *const *enck, const real *const *encv, const int *S,
                     real *hidden) {
    return forward_rows((Model *)handle, tokens, B, n, t0, kc, vc, cap, enck, encv, S, 1, 0, hidden);
}

/* The verifier's token for each of n rows of final features, under fairseq's beam-1 constraints: never padding,
 * unk_penalty subtracted from UNK, no EOS as the first output token (step 0), only EOS from step max_len on.
 * Row r predicts output step steps[r] and stops at maxl[r] (the rows may come from different sentences: a batched
 * pass decides all its rows in one call, the projection's weights streamed once for all of them). The argmax of the
 * logits is the argmax of the log-probabilities (a per-row constant apart); ties go to the lowest id, like
 * torch.argmax. ban (or NULL): a 0/1 byte per id, 1 = never chosen (a drafter's banned symbols). Every row's token
 * depends on that row alone. Returns 0, or -1 without scratch memory. */
/* Output o's logit exactly as the float kernels compute it (the bias, then a fused multiply-add per input in
 * ascending order: panel_kernel's arithmetic for one output). */
static real exact_logit(const Packed *P, int o, const real *x, const real *bias) {
    const real *w = P->p + (size_t)(o / PW) * P->K * PW + o % PW;
    real acc = bias ? bias[o] : 0;
    for (int i = 0; i < P->K; i++) acc = FMA(w[(size_t)i * PW], x[i], acc);
    return acc;
}

/* The step-independent masks of one row's chunk of logits v (outputs o0 .. o0+width-1), in place. */
static void mask_chunk(real *v, int o0, int width, int step, double unk_penalty, int eos, int pad, int unk,
                       const uint8_t *ban) {
    if (unk >= o0 && unk < o0 + width) v[unk - o0] -= (real)unk_penalty;
    if (pad >= o0 && pad < o0 + width) v[pad - o0] = (real)-1e30;
    if (ban)
        for (int j = 0; j < width; j++) v[j] = ban[o0 + j] ? (real)-1e30 : v[j];
    if (step == 0 && eos >= o0 && eos < o0 + width) v[eos - o0] = (real)-1e30;
}

/* The screen's bounds of one row's chunk: u[j] = v[j] + eps[j]; returns max(lo, max_j v[j] - eps[j]). Vectorised
 * with AVX-512 where the compiler targets it (a max reduction C leaves scalar without -ffast-math); either way the
 * bounds only select candidates, every candidate is rescored exactly. */
static real screen_bounds(const real *restrict v, const real *restrict ex, const real *restrict es, real xr, real sr,
                          int width, real *restrict u, real lo) {
    int j = 0;
#if defined(__AVX512F__) && !REAL_IS_DOUBLE
    const __m512 vx = _mm512_set1_ps(xr), vs = _mm512_set1_ps(sr), tiny = _mm512_set1_ps(1e-5f),
                 one = _mm512_set1_ps(1.0f);
    __m512 lov = _mm512_set1_ps(lo);
    for (; j + 16 <= width; j += 16) {
        const __m512 vv = _mm512_loadu_ps(v + j);
        __m512 e = _mm512_fmadd_ps(_mm512_loadu_ps(ex + j), vx, _mm512_mul_ps(_mm512_loadu_ps(es + j), vs));
        e = _mm512_fmadd_ps(tiny, _mm512_add_ps(one, _mm512_abs_ps(vv)), e);
        _mm512_storeu_ps(u + j, _mm512_add_ps(vv, e));
        lov = _mm512_max_ps(lov, _mm512_sub_ps(vv, e));
    }
    lo = _mm512_reduce_max_ps(lov);
#endif
    for (; j < width; j++) {
        const real eps = ex[j] * xr + es[j] * sr + (real)1e-5 * (1 + (v[j] < 0 ? -v[j] : v[j]));
        u[j] = v[j] + eps;
        lo = v[j] - eps > lo ? v[j] - eps : lo;
    }
    return lo;
}

/* The next id >= id in [id, V) whose upper bound u reaches lb (V when none): the candidates' scan, 16 at a time. */
static int next_candidate(const real *u, int id, int V, real lb) {
#if defined(__AVX512F__) && !REAL_IS_DOUBLE
    const __m512 lbv = _mm512_set1_ps(lb);
    for (; id + 16 <= V; id += 16) {
        const __mmask16 hit = _mm512_cmp_ps_mask(_mm512_loadu_ps(u + id), lbv, _CMP_GE_OQ);
        if (hit) return id + __builtin_ctz(hit);
    }
#endif
    for (; id < V; id++)
        if (u[id] >= lb) return id;
    return V;
}

/* The screened top-1 of a float model: the int8 copy of the projection (a quarter of the bytes to stream) gives every
 * logit within a proven bound eps of the float one; only the outputs whose upper bound reaches the largest lower
 * bound can be the argmax, and those are recomputed exactly (exact_logit). The float argmax can only be among them
 * (its upper bound is at least its value, at least every other value, at least every lower bound), so the result is
 * bit for bit the unscreened top-1's. eps of output o and row r, for x quantised with step sx and w with so:
 * |w.x - wq so . xq sx| <= so/2 |x|_1 + sx/2 (|w|_1 + K so/2) (eps_x, eps_s), widened by 1 % for the float roundings
 * of both sides (at most K u |w|.|x|, u = 2^-24: 0.2 % of the first term at K = 128) and by 1e-5 (1 + |logit|).
 * Masked outputs get a logit of -1e30: far below every bound, never a candidate. */
static int top1_screened(Model *m, const real *hidden, int n, const int *steps, const int *maxl, double unk_penalty,
                         int eos, int pad, int unk, const uint8_t *ban, int64_t *out) {
    enum { CHUNK = 16 * PW };
    const int V = m->V, E = m->E;
    const Packed *S = m->screen, *P = m->packed + (size_t)N_PACKED * m->L;
    const real *b = m->g[G_OUT_B];
    real *approx = scratch(m, (size_t)n * (CHUNK + V + 2));
    if (!approx) return -1;
    real *ub = approx + (size_t)n * CHUNK, *lb = ub + (size_t)n * V, *x1 = lb + n;
    real *sx;
    const int8_t *xq = quantize_rows(m, hidden, n, E, S->Kp, &sx);
    if (!xq) return -1;
    for (int r = 0; r < n; r++) {
        double a = 0;
        for (int i = 0; i < E; i++) a += fabs((double)hidden[(size_t)r * E + i]);
        x1[r] = (real)(a * (1 + 1e-6));
        lb[r] = -INFINITY;
    }
    for (int o0 = 0; o0 < V; o0 += CHUNK) {
        const int width = V - o0 < CHUNK ? V - o0 : CHUNK;
        gemm(NULL, xq, sx, n, S, o0 / PW, (o0 + width + PW - 1) / PW, b, approx, CHUNK);
        for (int r = 0; r < n; r++) {
            if (steps[r] >= maxl[r]) continue;
            real *v = approx + (size_t)r * CHUNK;
            mask_chunk(v, o0, width, steps[r], unk_penalty, eos, pad, unk, ban);
            lb[r] = screen_bounds(v, m->eps_x + o0, m->eps_s + o0, x1[r], sx[r], width, ub + (size_t)r * V + o0,
                                  lb[r]);
        }
    }
    for (int r = 0; r < n; r++) {
        out[r] = eos;
        if (steps[r] >= maxl[r]) continue;
        real best = -INFINITY;
        const real *u = ub + (size_t)r * V;
        out[r] = -1;
        for (int id = next_candidate(u, 0, V, lb[r]); id < V; id = next_candidate(u, id + 1, V, lb[r])) {
            if (id == pad || (id == eos && steps[r] == 0) || (ban && ban[id])) continue;
            real v = exact_logit(P, id, hidden + (size_t)r * E, b);
            if (id == unk) v -= (real)unk_penalty;
            if (v > best) { best = v; out[r] = id; }
        }
    }
    return 0;
}

/* The first maximum of v[0 .. width): raises *best (and sets *at to o0 + its index) when above *best. */
static void chunk_argmax(const real *v, int width, int o0, real *best, int64_t *at) {
    int j = 0;
    real mx = *best;
    int where = -1;
#if defined(__AVX512F__) && !REAL_IS_DOUBLE
    __m512 mv = _mm512_set1_ps(mx);
    for (; j + 16 <= width; j += 16) mv = _mm512_max_ps(mv, _mm512_loadu_ps(v + j));
    const real vmax = _mm512_reduce_max_ps(mv);
    if (vmax > mx) { /* the first index of the new maximum (ties: the lowest id) */
        for (int i = 0; i < j; i++)
            if (v[i] == vmax) { mx = vmax; where = i; break; }
    }
#endif
    for (; j < width; j++)
        if (v[j] > mx) { mx = v[j]; where = j; }
    if (where >= 0) { *best = mx; *at = o0 + where; }
}

static int top1_rows(Model *m, const real *hidden, int n, const int *steps, const int *maxl, double unk_penalty,
                     int eos, int pad, int unk, const uint8_t *ban, int64_t *out) {
    if (m->screen) return top1_screened(m, hidden, n, steps, maxl, unk_penalty, eos, pad, unk, ban, out);
    const int V = m->V;
    const real *b = m->g[G_OUT_B];
    /* vocabulary chunks of CHUNK outputs: the chunk's logits of every row, then their masked maxima */
    enum { CHUNK = 16 * PW };
    const Packed *P = m->packed + (size_t)N_PACKED * m->L;
    real *best = scratch(m, (size_t)n * (CHUNK + 1)), *logits = best + n;
    if (!best) return -1;
    real *sx = NULL; /* int8: the rows quantised once for every chunk */
    const int8_t *xq = NULL;
    if (P->q && !(xq = quantize_rows(m, hidden, n, P->K, P->Kp, &sx))) return -1;
    for (int r = 0; r < n; r++) { best[r] = -INFINITY; out[r] = -1; }
    for (int o0 = 0; o0 < V; o0 += CHUNK) {
        const int width = V - o0 < CHUNK ? V - o0 : CHUNK;
        gemm(hidden, xq, sx, n, P, o0 / PW, (o0 + width + PW - 1) / PW, b, logits, CHUNK);
        for (int r = 0; r < n; r++) {
            if (steps[r] >= maxl[r]) continue;
            real *row = logits + (size_t)r * CHUNK;
            mask_chunk(row, o0, width, steps[r], unk_penalty, eos, pad, unk, ban);
            chunk_argmax(row, width, o0, best + r, out + r);
        }
    }
    for (int r = 0; r < n; r++) {
        if (steps[r] >= maxl[r]) out[r] = eos;
        else if (best[r] <= (real)-1e30) out[r] = -1; /* every id masked */
    }
    return 0;
}

/* Rows r = 0 .. n-1 of one sentence's pass: row r predicts output step step0 + r (see top1_rows). */
int fd_top1(void *handle, const real *hidden, int n, int step0, int max_len, double unk_penalty, int eos, int pad,
            int unk, const uint8_t *ban, int64_t *out) {
    int *steps = (int *)malloc(sizeof(int) * 2 * (size_t)(n > 0 ? n : 1));
    if (!steps) return -1;
    int *maxl = steps + n;
    for (int r = 0; r < n; r++) { steps[r] = step0 + r; maxl[r] = max_len; }
    const int rc = top1_rows((Model *)handle, hidden, n, steps, maxl, unk_penalty, eos, pad, unk, ban, out);
    free(steps);
    return rc;
}

/* Rows of several sentences' passes in one call: row r predicts output step steps[r] of a sentence of at most
 * maxl[r] output tokens (see top1_rows). */
int fd_top1_rows(void *handle, const real *hidden, int n, const int *steps, const int *maxl, double unk_penalty,
                 int eos, int pad, int unk, int64_t *out) {
    return top1_rows((Model *)handle, hidden, n, steps, maxl, unk_penalty, eos, pad, unk, NULL, out);
}

/* The encoder-attention key/value projection of every layer, W [L * 2 * E, K] (layer after layer, its keys' E rows,
 * then its values'), b [L * 2 * E]: packed like the layers (int8 in an int8 model). W is copied; b must outlive the
 * model. Returns 0, -1 without memory. */
int fd_set_encoder_kv(void *handle, const real *W, const real *b, int K) {
    Model *m = (Model *)handle;
    free_packed(m->enc_kv);
    free(m->enc_kv);
    m->enc_kv = (Packed *)calloc(1, sizeof(Packed));
    m->enc_kv_b = b;
    if (!m->enc_kv || (m->int8 ? pack_int8 : pack)(m->enc_kv, W, 2 * m->L * m->E, K)) return -1;
    return 0;
}

/* One sentence's encoder-attention keys enck [L, H, D, S] (transposed) and values encv [L, H, S, D] from its encoder
 * output x [S, K]: one projection for every layer (fd_set_encoder_kv), in the layouts fd_forward reads. Returns 0, -1
 * without memory, -4 when no projection was set. */
int fd_encoder_kv(void *handle, const real *x, int S, real *enck, real *encv) {
    Model *m = (Model *)handle;
    if (!m->enc_kv) return -4;
    const int E = m->E, H = m->H, D = m->D, O = 2 * m->L * E;
    real *y = scratch(m, (size_t)S * O);
    if (!y) return -1;
    if (linear(m, x, S, m->enc_kv, m->enc_kv_b, y)) return -1;
    for (int l = 0; l < m->L; l++)
        for (int hh = 0; hh < H; hh++) {
            real *K = enck + (size_t)(l * H + hh) * D * S, *V = encv + (size_t)(l * H + hh) * S * D;
            for (int s = 0; s < S; s++) {
                const real *ks = y + (size_t)s * O + (size_t)2 * l * E + hh * D, *vs = ks + E;
                for (int d = 0; d < D; d++) K[(size_t)d * S + s] = ks[d];
                memcpy(V + (size_t)s * D, vs, sizeof(real) * D);
            }
        }
    return 0;
}

/* The vocabulary logits [n, V] of n rows of final features: the projection fd_top1 takes its maxima from. */
int fd_logits(void *handle, const real *hidden, int n, real *logits) {
    Model *m = (Model *)handle;
    const Packed *P = m->packed + (size_t)N_PACKED * m->L;
    return project(m, hidden, n, P, 0, P->panels, m->g[G_OUT_B], logits, m->V);
}
