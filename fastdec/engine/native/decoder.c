/* The fast verifier's decoder pass: a fairseq Transformer decoder (pre- or post-norm) over a rollback-able KV cache,
 * in plain C, called through ctypes (fastdec/engine/fast_verifier.py). Compiled twice, with REAL = float and double.
 *
 * Why C: at the demo's size (128-dim, 3 layers) one PyTorch decoder step is mostly per-operator overhead (~1.5 ms
 * for ~0.1 M multiply-adds); here a step is a few straight loops.
 *
 * Why row-invariant: every output row (one fed position) is computed by the same loops in the same order whatever
 * the number of rows fed together, so scoring k drafted tokens in one pass gives bit for bit the rows that k
 * one-token passes give. Draft-and-verify on this backend therefore returns exactly this backend's greedy output
 * (lossless by construction, not only up to floating-point ties). Every dot product goes through one non-inlined
 * function, so its summation order cannot depend on the call site. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

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

typedef struct {
    int L, E, H, D, F, V, P, pre_norm, act;
    real embed_scale;
    double eps_emb, eps_fin;
    double *eps;           /* [L, 3]: self-attention, encoder-attention, feed-forward layer norms */
    const real *g[N_GLOBAL_PTRS];
    const real **w;        /* [L, N_LAYER_PTRS] */
    real *scratch;
    size_t scratch_n;
} Model;

__attribute__((noinline)) static real dot(const real *a, const real *b, int n) {
    real s = 0;
#pragma omp simd reduction(+ : s)
    for (int i = 0; i < n; i++) s += a[i] * b[i];
    return s;
}

/* Four dot products with one vector: the input is loaded once for four weight rows and the four independent sums
 * hide the FMA latency. Output row o always goes through the same kernel (dot4 for o < O - O % 4, dot after), so its
 * value never depends on how many input rows are fed. */
__attribute__((noinline)) static void dot4(const real *w, size_t stride, const real *x, int n, real *out) {
    const real *w0 = w, *w1 = w + stride, *w2 = w + 2 * stride, *w3 = w + 3 * stride;
    real s0 = 0, s1 = 0, s2 = 0, s3 = 0;
#pragma omp simd reduction(+ : s0, s1, s2, s3)
    for (int i = 0; i < n; i++) {
        s0 += w0[i] * x[i];
        s1 += w1[i] * x[i];
        s2 += w2[i] * x[i];
        s3 += w3[i] * x[i];
    }
    out[0] = s0; out[1] = s1; out[2] = s2; out[3] = s3;
}

/* out[r, o] = b[o] + W[o, :] . in[r, :]  (W: [O, K] row-major, PyTorch's Linear layout); each block of four weight
 * rows is reused for every input row while it is in cache. */
static void linear(const real *in, int n, int K, const real *W, const real *b, int O, real *out) {
    const int O4 = O - O % 4;
    real s[4];
    for (int o = 0; o < O4; o += 4) {
        const real *w = W + (size_t)o * K;
        for (int r = 0; r < n; r++) {
            dot4(w, K, in + (size_t)r * K, K, s);
            real *y = out + (size_t)r * O + o;
            for (int j = 0; j < 4; j++) y[j] = s[j] + (b ? b[o + j] : 0);
        }
    }
    for (int o = O4; o < O; o++)
        for (int r = 0; r < n; r++) out[(size_t)r * O + o] = dot(W + (size_t)o * K, in + (size_t)r * K, K) + (b ? b[o] : 0);
}

static void layer_norm(real *x, int E, const real *w, const real *b, double eps) {
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

/* One head of one row: softmax(q . K[0..T)) V  ->  out[D]. K, V: [T, D]; q already scaled; p: [T] scratch. */
static void attend(const real *q, const real *K, const real *Vv, int T, int D, real *p, real *out) {
    real m = -INFINITY;
    for (int j = 0; j < T; j++) { p[j] = dot(q, K + (size_t)j * D, D); if (p[j] > m) m = p[j]; }
    real sum = 0;
    for (int j = 0; j < T; j++) { p[j] = (real)exp(p[j] - m); sum += p[j]; }
    for (int d = 0; d < D; d++) out[d] = 0;
    for (int j = 0; j < T; j++) {
        const real pj = p[j], *v = Vv + (size_t)j * D;
        for (int d = 0; d < D; d++) out[d] += pj * v[d];
    }
    real inv = 1 / sum;
    for (int d = 0; d < D; d++) out[d] *= inv;
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
    m->pre_norm = ints[6]; m->act = ints[7];
    m->D = m->E / m->H;
    m->embed_scale = (real)reals[0];
    m->eps_emb = reals[1]; m->eps_fin = reals[2];
    m->eps = (double *)malloc(sizeof(double) * 3 * m->L);
    m->w = (const real **)malloc(sizeof(real *) * N_LAYER_PTRS * m->L);
    if (!m->eps || !m->w) return NULL;
    memcpy(m->eps, reals + 3, sizeof(double) * 3 * m->L);
    memcpy(m->g, global_ptrs, sizeof(void *) * N_GLOBAL_PTRS);
    memcpy(m->w, layer_ptrs, sizeof(void *) * N_LAYER_PTRS * m->L);
    return m;
}

void fd_free(void *handle) {
    Model *m = (Model *)handle;
    if (!m) return;
    free(m->eps); free(m->w); free(m->scratch); free(m);
}

/* Feed n tokens at positions t0 .. t0+n-1 and append their keys/values to the cache.
 * kc, vc: [L, H, cap, D]; enck, encv: [L, H, S, D] (the encoder-attention keys/values, projected once per sentence).
 * causal = 0: every new row attends to every position < t0+n (a bidirectional decoder); bidir_tail = m: the last m
 * rows do (the masked block of a prefix-causal drafter). hidden: [n, E], the final decoder features.
 * enck = NULL runs encoder layers (self-attention and feed-forward only; with causal = 0 and kc, vc of cap >= n the
 * Transformer encoder of one sentence).
 * Returns 0; -1 when the scratch memory cannot be allocated, -2 for a token id outside the vocabulary. */
int fd_forward(void *handle, const int64_t *tokens, int n, int t0, real *kc, real *vc, int cap, const real *enck,
               const real *encv, int S, int causal, int bidir_tail, real *hidden) {
    Model *m = (Model *)handle;
    const int E = m->E, H = m->H, D = m->D, F = m->F, t1 = t0 + n;
    const int T = t1 > S ? t1 : S;
    const int wide = F > 3 * E ? F : 3 * E;
    /* scratch: h [n, E] (normed input / projection output), big [n, wide] (qkv or the FFN's inner layer), att [n, E]
     * (attention output), p [T] (attention weights of one head) */
    real *h = scratch(m, (size_t)n * (2 * E + wide) + T);
    if (!h) return -1;
    real *x = hidden, *big = h + (size_t)n * E, *att = big + (size_t)n * wide, *p = att + (size_t)n * E;
    for (int r = 0; r < n; r++)
        if (tokens[r] < 0 || tokens[r] >= m->V) return -2;
    const real *embed = m->g[G_EMBED], *pos = m->g[G_POS];
    for (int r = 0; r < n; r++) {
        real *xr = x + (size_t)r * E;
        const real *e = embed + (size_t)tokens[r] * E;
        for (int i = 0; i < E; i++) xr[i] = e[i] * m->embed_scale;
        if (pos) { const real *pr = pos + (size_t)(t0 + r) * E; for (int i = 0; i < E; i++) xr[i] += pr[i]; }
        if (m->g[G_LN_EMB_W]) layer_norm(xr, E, m->g[G_LN_EMB_W], m->g[G_LN_EMB_B], m->eps_emb);
    }
    for (int l = 0; l < m->L; l++) {
        const real **w = m->w + (size_t)l * N_LAYER_PTRS;
        const double *eps = m->eps + 3 * l;
        real *K = kc + (size_t)l * H * cap * D, *Vc = vc + (size_t)l * H * cap * D;
        const real *EK = enck ? enck + (size_t)l * H * S * D : NULL, *EV = encv ? encv + (size_t)l * H * S * D : NULL;
        /* self-attention */
        if (m->pre_norm) layer_norm_rows(x, h, n, E, w[LN_SA_W], w[LN_SA_B], eps[0]);
        linear(m->pre_norm ? h : x, n, E, w[W_QKV], w[B_QKV], 3 * E, big);
        for (int r = 0; r < n; r++)
            for (int hh = 0; hh < H; hh++) {
                const real *qkv = big + (size_t)r * 3 * E;
                memcpy(K + ((size_t)hh * cap + t0 + r) * D, qkv + E + hh * D, sizeof(real) * D);
                memcpy(Vc + ((size_t)hh * cap + t0 + r) * D, qkv + 2 * E + hh * D, sizeof(real) * D);
            }
        for (int r = 0; r < n; r++) {
            int upto = (!causal || r >= n - bidir_tail) ? t1 : t0 + r + 1;
            for (int hh = 0; hh < H; hh++)
                attend(big + (size_t)r * 3 * E + hh * D, K + (size_t)hh * cap * D, Vc + (size_t)hh * cap * D, upto,
                       D, p, att + (size_t)r * E + hh * D);
        }
        linear(att, n, E, w[W_O], w[B_O], E, h);
        for (size_t i = 0; i < (size_t)n * E; i++) x[i] += h[i];
        if (!m->pre_norm) layer_norm_rows(x, x, n, E, w[LN_SA_W], w[LN_SA_B], eps[0]);
        if (enck) { /* encoder attention (an encoder layer has none) */
            if (m->pre_norm) layer_norm_rows(x, h, n, E, w[LN_CA_W], w[LN_CA_B], eps[1]);
            linear(m->pre_norm ? h : x, n, E, w[W_CQ], w[B_CQ], E, big);
            for (int r = 0; r < n; r++)
                for (int hh = 0; hh < H; hh++)
                    attend(big + (size_t)r * E + hh * D, EK + (size_t)hh * S * D, EV + (size_t)hh * S * D, S, D, p,
                           att + (size_t)r * E + hh * D);
            linear(att, n, E, w[W_CO], w[B_CO], E, h);
            for (size_t i = 0; i < (size_t)n * E; i++) x[i] += h[i];
            if (!m->pre_norm) layer_norm_rows(x, x, n, E, w[LN_CA_W], w[LN_CA_B], eps[1]);
        }
        /* feed-forward */
        if (m->pre_norm) layer_norm_rows(x, h, n, E, w[LN_FF_W], w[LN_FF_B], eps[2]);
        linear(m->pre_norm ? h : x, n, E, w[W_FC1], w[B_FC1], F, big);
        for (size_t i = 0; i < (size_t)n * F; i++) big[i] = activation(big[i], m->act);
        linear(big, n, F, w[W_FC2], w[B_FC2], E, h);
        for (size_t i = 0; i < (size_t)n * E; i++) x[i] += h[i];
        if (!m->pre_norm) layer_norm_rows(x, x, n, E, w[LN_FF_W], w[LN_FF_B], eps[2]);
    }
    if (m->g[G_LN_FIN_W]) layer_norm_rows(x, x, n, E, m->g[G_LN_FIN_W], m->g[G_LN_FIN_B], m->eps_fin);
    return 0;
}

/* The verifier's token for each of n rows of final features, under fairseq's beam-1 constraints: never padding,
 * unk_penalty subtracted from UNK, no EOS as the first output token (step 0), only EOS from step max_len on.
 * Row r predicts output step step0 + r. The argmax of the logits is the argmax of the log-probabilities (a per-row
 * constant apart); ties go to the lowest id, like torch.argmax. */
void fd_top1(void *handle, const real *hidden, int n, int step0, int max_len, double unk_penalty, int eos, int pad,
             int unk, int64_t *out) {
    Model *m = (Model *)handle;
    const int E = m->E, V = m->V;
    const real *W = m->g[G_OUT_W], *b = m->g[G_OUT_B];
    real *best = scratch(m, (size_t)n), s[4];
    const int V4 = V - V % 4;
    for (int r = 0; r < n; r++) { best[r] = -INFINITY; out[r] = -1; }
    for (int o = 0; o < V; o += 4) {
        const int width = o < V4 ? 4 : V - o;
        for (int r = 0; r < n; r++) {
            const int step = step0 + r;
            if (step >= max_len) continue;
            const real *x = hidden + (size_t)r * E;
            if (width == 4) dot4(W + (size_t)o * E, E, x, E, s);
            else for (int j = 0; j < width; j++) s[j] = dot(W + (size_t)(o + j) * E, x, E);
            for (int j = 0; j < width; j++) {
                const int id = o + j;
                if (id == pad || (id == eos && step == 0)) continue;
                real v = s[j] + (b ? b[id] : 0);
                if (id == unk) v -= (real)unk_penalty;
                if (v > best[r]) { best[r] = v; out[r] = id; }
            }
        }
    }
    for (int r = 0; r < n; r++)
        if (step0 + r >= max_len) out[r] = eos;
}
