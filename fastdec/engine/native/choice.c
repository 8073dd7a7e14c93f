/* The cost-aware policy's batched choice on a fused pass (a CPU's pass over the rows' real positions), in C.

   The same choice as the Python loop of BatchedChoice.choose_batch, reading the same positions in the same order and
   computing every number by the same operations in the same order (compiled without -ffast-math and with
   -ffp-contract=off): the two return the same draft lengths bit for bit, which the tests check on random batches. In
   Python each position read cost about 2.7 us (a heap of rows' next positions, a generator, a closure), 5-8 % of a
   batched decode at B = 2-8 on the fast backend.

   A row's positions m = 1 .. limit are worth the product of its sentence's rates up to m; the choice takes positions
   best value first (ties: the lower row) and keeps the count of them that promises the most tokens per second. */
#include <stdlib.h>

typedef struct {
    double p;
    int r, m;
} Position;

/* a comes before b: the higher value, then the lower row (a row has one position in the heap at a time) */
static int before(const Position *a, const Position *b) {
    return a->p > b->p || (a->p == b->p && a->r < b->r);
}

static void sift_down(Position *heap, int n, int i) {
    Position x = heap[i];
    for (;;) {
        int c = 2 * i + 1;
        if (c >= n) break;
        if (c + 1 < n && before(&heap[c + 1], &heap[c])) c++;
        if (!before(&heap[c], &x)) break;
        heap[i] = heap[c];
        i = c;
    }
    heap[i] = x;
}

/* q_m for a row's sentence, leaning on its own counts (reach NULL: none yet, the rates of a sentence's first draft) */
static double rate(const int *reach, const int *acc, const double *q, const double *q_first, double w, int m) {
    if (!reach) return q_first[m];
    return reach[m] ? (acc[m] + w * q[m]) / (reach[m] + w) : q[m];
}

/* MeasuredCosts._lookup: the running mean at `rows`, else the nearest measured count's (the smaller of two as near),
   scaled up by the row ratio when `rows` is larger */
static double lookup(const int *keys, const double *vals, int n, int rows) {
    int near = -1;
    if (n == 0) return 0.0;
    for (int i = 0; i < n; i++) {
        if (keys[i] == rows) return vals[i];
        if (near < 0) { near = i; continue; }
        int d = abs(keys[i] - rows), dn = abs(keys[near] - rows);
        if (d < dn || (d == dn && keys[i] < keys[near])) near = i;
    }
    double ratio = (double)rows / (double)keys[near];
    return vals[near] * (ratio > 1.0 ? ratio : 1.0);
}

/* The choice for B rows. Per row: limits (draft positions at most), reach / acc (its sentence's counts by position,
   NULL: none), fresh (its drafter has not started), left (tokens it has left). q / q_first: the input's rates by
   position. extra[t] / least[t], t < n_extra: what t draft tokens add to the pass, and the least one more adds from t
   on. The drafter's calls and starts by rows asked: (d_keys, d_vals), (s_keys, s_vals). par: weight, floor, greedy
   step, fixed part of the drafted pass, factor, the choice's seconds per position read, padding's seconds a position,
   a first bet's cap, the bar to clear. most: a first bet's tokens.
   Returns the number of positions taken (0: no draft clears the bar) with n_out[r] (each row's draft length), out[0]
   (the tokens per second they promise), out[1] (the tokens they expect) and *read_out (positions read); or -1 when the
   tables are too short: *read_out is then the length they need (the caller extends them and asks again). */
int fd_choose_fused(int B, const int *limits, const int *const *reach, const int *const *acc, const int *fresh,
                    const int *left, const double *q, const double *q_first, const double *extra,
                    const double *least, int n_extra, const int *d_keys, const double *d_vals, int n_d,
                    const int *s_keys, const double *s_vals, int n_s, const double *par, int most, int *n_out,
                    double *out, int *read_out) {
    const double w = par[0], floor_ = par[1], step = par[2], fixed = par[3], factor = par[4], read = par[5],
                 pad = par[6], cap = par[7];
    double best = par[8], inv_best = 1.0 / best, best_expected = 0.0, expected = (double)B;
    double drafter = fixed, new_tokens = 0.0, start = 0.0, charged = 0.0;
    long new_left = 0;
    int best_t = 0, t = 0, n_asked = 0, asked_new = 0, width = 1, n_heap = 0, total = 0, rc = 0;
    for (int r = 0; r < B; r++) {
        n_out[r] = 0;
        total += limits[r] > 0 ? limits[r] : 0;
    }
    Position *heap = malloc(sizeof(Position) * (size_t)(B > 0 ? B : 1));
    int *taken = malloc(sizeof(int) * (size_t)(total > 0 ? total : 1));
    char *asked = calloc((size_t)(B > 0 ? B : 1), 1);
    if (!heap || !taken || !asked) {
        free(heap); free(taken); free(asked);
        return -2;
    }
    if (floor_ < 1.0) {
        const double lowest = floor_ > 0.01 ? floor_ : 0.01;
        for (int r = 0; r < B; r++) {
            double p = limits[r] > 0 ? rate(reach[r], acc[r], q, q_first, w, 1) : 0.0;
            if (p >= lowest) heap[n_heap++] = (Position){p, r, 1};
        }
        for (int i = n_heap / 2 - 1; i >= 0; i--) sift_down(heap, n_heap, i);
        while (n_heap) {
            const double p = heap[0].p;
            const int r = heap[0].r, m = heap[0].m;
            t++;
            taken[t - 1] = r;
            expected += p;
            if (t + 1 >= n_extra) {
                *read_out = 2 * t + 2;
                rc = -1;
                goto done;
            }
            if (!asked[r]) {
                asked[r] = 1;
                n_asked++;
                if (fresh[r]) {
                    asked_new++;
                    new_tokens += 1.0;
                    new_left += left[r];
                    start = asked_new > 0 ? lookup(s_keys, s_vals, n_s, asked_new) : 0.0;
                }
                drafter = fixed + lookup(d_keys, d_vals, n_d, n_asked);
            }
            if (fresh[r]) {
                new_tokens += p;
                const double share = new_tokens / (double)new_left;
                charged = start * (share < 1.0 ? share : 1.0);
            }
            const double base = step + drafter + charged;
            if (m >= width) width = m + 1;
            double added = extra[t];
            if (pad != 0.0) added += pad * (double)(B * (width - 1) - t);
            if (t > most && factor * added > cap) break;
            const double rate_t = expected / (base + factor * added + (double)t * read);
            if (rate_t > best) {
                best_t = t;
                best = rate_t;
                inv_best = 1.0 / rate_t;
                best_expected = expected;
            } else if (p * inv_best < factor * (least[t] - pad) + read) {
                break;
            }
            /* the row's next position in its place, or the row leaves the heap */
            if (m + 1 <= limits[r]) {
                const double next = p * rate(reach[r], acc[r], q, q_first, w, m + 1);
                if (next >= lowest) {
                    heap[0] = (Position){next, r, m + 1};
                    sift_down(heap, n_heap, 0);
                    continue;
                }
            }
            heap[0] = heap[--n_heap];
            if (n_heap) sift_down(heap, n_heap, 0);
        }
    }
    for (int i = 0; i < best_t; i++) n_out[taken[i]]++;
    out[0] = best;
    out[1] = best_expected;
    *read_out = t;
    rc = best_t;
done:
    free(heap); free(taken); free(asked);
    return rc;
}
