/* The cost-aware policy's choices in C: a Python extension module (_fd_choice), compiled on first use.

   - The batched choice on a fused pass (a CPU's pass over the rows' real positions), choose_fused: the same choice as
     the Python loop of BatchedChoice.choose_batch, reading the same positions in the same order. In Python each
     position read cost about 2.7 us (a heap of rows' next positions, a generator, a closure), 5-8 % of a batched decode
     at B = 2-8 on the fast backend. It reads the rows' counts and the policy's tables from the Python objects
     themselves, and each row's counts, drafter start and tokens left from its decode state: handed over through
     ctypes (each row's counts copied to C ints, the tables kept as C arrays), the hand-over took 30-50 us of a
     45-65 us choice.
   - The counting of a batched pass's rows (count_rows): each row's iteration into its sentence's counts and the
     input's, as AcceptanceCounts.observe_rows counts them (in Python 3-4 us a row, and 8-9 us a sentence's first).
   - The batch-1 counting and choice (count_sentence, best_length): every iteration of a batch-1 decode counts its
     draft into its sentence's counts and chooses the next draft length from them; in Python the two loops over draft
     positions took about a fifth of the policy's time there. They read and write the same Python lists the Python
     loops do (a sentence's counts stay lists: the batched choice and the tests read them).

   Every number is computed by the same operations in the same order as in Python (compiled without -ffast-math and
   with -ffp-contract=off), so each function returns what the Python loop it stands for returns, bit for bit, which
   the tests check on random inputs.

   A row's positions m = 1 .. limit are worth the product of its sentence's rates up to m; the batched choice takes
   positions best value first (ties: the lower row) and keeps the count of them that promises the most tokens per
   second. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>
#include <string.h>

/* libm's pow, as Python's float ** float calls it (the compiler would turn pow(x, 2.0) into x * x) */
static double (*volatile pow_)(double, double) = pow;

/* item m of a list of numbers as a double (ints exactly, as Python's int + float converts them) */
static int number_at(PyObject *list, Py_ssize_t m, double *out) {
    if (m >= PyList_GET_SIZE(list)) {
        PyErr_SetString(PyExc_IndexError, "list index out of range");
        return -1;
    }
    PyObject *x = PyList_GET_ITEM(list, m);
    if (PyFloat_CheckExact(x)) {
        *out = PyFloat_AS_DOUBLE(x);
        return 0;
    }
    *out = PyFloat_AsDouble(x);
    return (*out == -1.0 && PyErr_Occurred()) ? -1 : 0;
}

static int lists(PyObject *const *args, Py_ssize_t n) {
    for (Py_ssize_t i = 0; i < n; i++)
        if (!PyList_Check(args[i])) {
            PyErr_Format(PyExc_TypeError, "argument %zd must be a list, not %s", i + 1, Py_TYPE(args[i])->tp_name);
            return -1;
        }
    return 0;
}

/* list[m] += 1 */
static int add_one(PyObject *list, Py_ssize_t m) {
    PyObject *old = PyList_GET_ITEM(list, m), *sum;
    long v;
    if (PyLong_CheckExact(old) && (v = PyLong_AsLong(old)) != -1 && v < LONG_MAX) {
        sum = PyLong_FromLong(v + 1);
    } else {
        PyErr_Clear();
        PyObject *one = PyLong_FromLong(1);
        sum = one ? PyNumber_Add(old, one) : NULL;
        Py_XDECREF(one);
    }
    if (!sum) return -1;
    PyList_SET_ITEM(list, m, sum);
    Py_DECREF(old);
    return 0;
}

/* a sentence's counts of an iteration: positions 1 .. got reached and accepted, got + 1 .. top reached (the lists
   checked long enough by the caller) */
static int count_into(PyObject *reach, PyObject *acc, long top, long got) {
    for (long m = 1; m <= top; m++)
        if (add_one(reach, m) < 0 || (m <= got && add_one(acc, m) < 0)) return -1;
    return 0;
}

/* count_sentence(reach, acc, top, got): positions 1 .. got reached and accepted, got + 1 .. top reached */
static PyObject *count_sentence(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 4) {
        PyErr_SetString(PyExc_TypeError, "count_sentence(reach, acc, top, got)");
        return NULL;
    }
    if (lists(args, 2) < 0) return NULL;
    const long top = PyLong_AsLong(args[2]), got = PyLong_AsLong(args[3]);
    if (PyErr_Occurred()) return NULL;
    PyObject *reach = args[0], *acc = args[1];
    if (top >= PyList_GET_SIZE(reach) || got >= PyList_GET_SIZE(acc) || got > top) {
        PyErr_SetString(PyExc_IndexError, "a sentence's counts are shorter than the draft counted");
        return NULL;
    }
    if (count_into(reach, acc, top, got) < 0) return NULL;
    Py_RETURN_NONE;
}

/* an int attribute of a decode state */
static int int_attr(PyObject *obj, PyObject *name, long *out) {
    PyObject *x = PyObject_GetAttr(obj, name);
    if (!x) return -1;
    *out = PyLong_AsLong(x);
    Py_DECREF(x);
    return (*out == -1 && PyErr_Occurred()) ? -1 : 0;
}

static PyObject *s_last_drafted, *s_last_accepted, *s_extra, *s_policy_counts, *s_drafter_started, *s_src_list,
    *s_prefix;

/* the exact rule's chunks on a CPU: 8, 16, 32 ... positions, a chunk starting at s holding s + 8 */
#define CHUNK 8

/* MeasuredCosts._projected_rows: positions past its first the exact rule projects for a row that drafted `drafted`
   tokens and had `accepted` of them accepted */
static long projected_rows(long drafted, long accepted) {
    long total = drafted + 1 < CHUNK ? drafted + 1 : CHUNK, start = CHUNK;
    while (drafted >= start && accepted >= start) {
        const long end = 2 * start + CHUNK;
        total += (end < drafted + 1 ? end : drafted + 1) - start;
        start = end;
    }
    return total - 1;
}

/* a sentence's first counts, as AcceptanceCounts._count_sentence makes them -- ([0] * (horizon + 2),
   [0] * (horizon + 2)) -- kept in its state's extra dict */
static PyObject *new_counts(PyObject *extra, long horizon) {
    PyObject *reach = PyList_New(horizon + 2), *acc = PyList_New(horizon + 2), *zero = PyLong_FromLong(0), *sent = NULL;
    if (!reach || !acc || !zero) goto done;
    for (long m = 0; m < horizon + 2; m++) {
        Py_INCREF(zero);
        PyList_SET_ITEM(reach, m, zero);
        Py_INCREF(zero);
        PyList_SET_ITEM(acc, m, zero);
    }
    sent = PyTuple_Pack(2, reach, acc);
    if (sent && PyDict_SetItem(extra, s_policy_counts, sent) < 0) Py_CLEAR(sent);
done:
    Py_XDECREF(reach);
    Py_XDECREF(acc);
    Py_XDECREF(zero);
    Py_XDECREF(sent); /* (the dict holds it: returned borrowed) */
    return sent;
}

/* count_rows(states, asked, start, horizon, ends, gots, ends_first, gots_first, stale, reach_1):
   AcceptanceCounts.observe_rows from row `start` on -- each row asked for a draft (asked[r] > 0): its iteration added
   to its sentence's counts (count_sentence; a sentence's first drafted iteration makes them, as _count_sentence does,
   and is also counted in ends_first / gots_first) and to the input's counts waiting to be folded (ends[top] += 1,
   gots[got] += 1), `stale` going up by one a row. Stops after the row that makes 4 * stale >= reach_1 (the policy
   refreshes its rates there, as _count does). Returns (the row after the last counted, or len(states); tokens
   accepted, rows counted, the deepest position counted, stale, the positions past their first the pass projected for
   the rows counted: MeasuredCosts._projected_rows). */
static PyObject *count_rows(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 10) {
        PyErr_SetString(PyExc_TypeError, "count_rows(states, asked, start, horizon, ends, gots, ends_first, "
                                         "gots_first, stale, reach_1)");
        return NULL;
    }
    if (lists(args, 2) < 0 || lists(args + 4, 4) < 0) return NULL;
    PyObject *states = args[0], *asked = args[1], *ends = args[4], *gots = args[5], *ends_first = args[6],
             *gots_first = args[7];
    const Py_ssize_t n = PyList_GET_SIZE(states);
    const long start = PyLong_AsLong(args[2]), horizon = PyLong_AsLong(args[3]);
    long stale = PyLong_AsLong(args[8]);
    const double reach_1 = PyFloat_AsDouble(args[9]);
    if (PyErr_Occurred()) return NULL;
    if (PyList_GET_SIZE(asked) != n) {
        PyErr_SetString(PyExc_ValueError, "asked must have one item a row");
        return NULL;
    }
    long accepted_sum = 0, counted = 0, deepest = 0, projected = 0;
    Py_ssize_t r = start < 0 ? 0 : start;
    for (; r < n; r++) {
        const long want = PyLong_AsLong(PyList_GET_ITEM(asked, r));
        if (want == -1 && PyErr_Occurred()) return NULL;
        if (!want) continue;
        PyObject *st = PyList_GET_ITEM(states, r);
        long drafted, accepted, top, got;
        if (int_attr(st, s_last_drafted, &drafted) < 0 || int_attr(st, s_last_accepted, &accepted) < 0) return NULL;
        projected += projected_rows(drafted, accepted);
        if (drafted > 0) { /* (_reached, for a row that was asked) */
            top = accepted + 1 < drafted ? accepted + 1 : drafted;
            if (horizon < top) top = horizon;
            got = accepted < top ? accepted : top;
        } else {
            top = 1;
            got = 0;
        }
        PyObject *extra = PyObject_GetAttr(st, s_extra);
        if (!extra) return NULL;
        if (!PyDict_Check(extra)) {
            Py_DECREF(extra);
            PyErr_SetString(PyExc_TypeError, "a state's extra must be a dict");
            return NULL;
        }
        PyObject *sent = PyDict_GetItemWithError(extra, s_policy_counts);
        const int first = !sent || sent == Py_None;
        if (!PyErr_Occurred() && first) sent = new_counts(extra, horizon);
        Py_DECREF(extra); /* (the state holds the dict, and the dict the counts) */
        if (!sent) {
            if (!PyErr_Occurred()) PyErr_SetString(PyExc_RuntimeError, "a row's counts could not be made");
            return NULL;
        }
        if (!PyTuple_Check(sent) || PyTuple_GET_SIZE(sent) != 2 || !PyList_Check(PyTuple_GET_ITEM(sent, 0)) ||
            !PyList_Check(PyTuple_GET_ITEM(sent, 1))) {
            PyErr_SetString(PyExc_ValueError, "a row's counts must be a (reach, acc) tuple of lists");
            return NULL;
        }
        PyObject *reach = PyTuple_GET_ITEM(sent, 0), *acc = PyTuple_GET_ITEM(sent, 1);
        if (top >= PyList_GET_SIZE(reach) || top >= PyList_GET_SIZE(acc) || top >= PyList_GET_SIZE(ends) ||
            top >= PyList_GET_SIZE(gots) || top >= PyList_GET_SIZE(ends_first) || top >= PyList_GET_SIZE(gots_first)
            || got < 0) {
            PyErr_SetString(PyExc_IndexError, "counts shorter than the draft counted");
            return NULL;
        }
        if (count_into(reach, acc, top, got) < 0) return NULL;
        if (first && (add_one(ends_first, top) < 0 || add_one(gots_first, got) < 0)) return NULL;
        if (add_one(ends, top) < 0 || add_one(gots, got) < 0) return NULL;
        accepted_sum += accepted;
        counted++;
        if (top > deepest) deepest = top;
        stale++;
        if (4.0 * (double)stale >= reach_1) { /* (exact: both sides are small integers or halves) */
            r++;
            break;
        }
    }
    return Py_BuildValue("(nlllll)", r, accepted_sum, counted, deepest, stale, projected);
}

/* best_length(limit, reach, acc, q, least, table, weight, base, factor, best): BatchOneChoice._best_length's loop
   over a sentence with counts of its own -- the draft length 1 .. limit with the most expected tokens per second
   above `best` (tokens per second), else 0 */
static PyObject *best_length(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 10) {
        PyErr_SetString(PyExc_TypeError, "best_length(limit, reach, acc, q, least, table, weight, base, factor, best)");
        return NULL;
    }
    if (lists(args + 1, 5) < 0) return NULL;
    const long limit = PyLong_AsLong(args[0]);
    const double w = PyFloat_AsDouble(args[6]), base = PyFloat_AsDouble(args[7]), factor = PyFloat_AsDouble(args[8]);
    double best = PyFloat_AsDouble(args[9]);
    if (PyErr_Occurred()) return NULL;
    PyObject *reach = args[1], *acc = args[2], *q = args[3], *least = args[4], *table = args[5];
    double bar = factor * best, expected = 1.0, p = 1.0;
    long best_n = 0;
    for (long n = 1; n <= limit; n++) {
        double seen, qn, got, low, t;
        if (number_at(reach, n, &seen) < 0 || number_at(q, n, &qn) < 0) return NULL;
        if (seen != 0.0) {
            if (number_at(acc, n, &got) < 0) return NULL;
            p *= (got + w * qn) / (seen + w);
        } else {
            p *= qn;
        }
        if (p < 0.01) break;
        if (number_at(least, n - 1, &low) < 0) return NULL;
        if (p < bar * low) break; /* no position from n on can pay for its place: the values only fall */
        expected += p;
        if (number_at(table, n, &t) < 0) return NULL;
        const double rate = expected / (base + factor * t);
        if (rate > best) {
            best_n = n;
            best = rate;
            bar = factor * rate;
        }
    }
    return PyLong_FromLong(best_n);
}


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

/* item i of a list of numbers as a double (ints exactly, as Python's int + float converts them), read where the choice
   reads it: copied whole, every row's counts and the tables cost more than the choice (each item its own object, each
   a cache miss after a pass of the C backend). The caller checks the list's length; an error is left set. */
static inline double item(PyObject *list, Py_ssize_t i) {
    PyObject *x = PyList_GET_ITEM(list, i);
    if (PyFloat_CheckExact(x)) return PyFloat_AS_DOUBLE(x);
    if (PyLong_CheckExact(x)) return (double)PyLong_AsLong(x);
    return PyFloat_AsDouble(x);
}

/* q_m for a row's sentence, leaning on its own counts (reach NULL: none yet, the rates of a sentence's first draft) */
static double rate(PyObject *reach, PyObject *acc, PyObject *q, PyObject *q_first, double w, int m) {
    if (!reach) return item(q_first, m);
    const double seen = item(reach, m);
    return seen != 0.0 ? (item(acc, m) + w * item(q, m)) / (seen + w) : item(q, m);
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

/* The batched choice for B rows. Per row: limits (draft positions at most), reach / acc (its sentence's counts by
   position, lists long enough for its limit; NULL: none), fresh (its drafter has not started), left (tokens it has
   left). q / q_first: the input's rates by position (lists long enough for every limit). fed[t] / rows_tab[t] /
   least[t], t < n_extra: what t tokens fed and t rows projected add to the pass, and the least one more token's
   feeding adds from t on. A row's positions past its 8th are projected only where its drafts before their chunk
   (chunks of 8, 16, 32 ... positions) were all accepted: they count as projected rows in expectation, at the row's
   value at their chunk's start (rows_tab read between its integer points). The drafter's calls and starts by rows asked: (d_keys, d_vals), (s_keys, s_vals). par: weight, floor, greedy
   step, fixed part of the drafted pass, factor, the choice's seconds per position read, padding's seconds a position,
   a first bet's cap, the bar to clear. most: a first bet's tokens.
   Returns the number of positions taken (0: no draft clears the bar) with n_out[r] (each row's draft length), out[0]
   (the tokens per second they promise), out[1] (the tokens they expect) and *read_out (positions read); or -1 when the
   tables are too short: *read_out is then the length they need (the caller extends them and asks again). */
static int fused(int B, const int *limits, PyObject *const *reach, PyObject *const *acc, const int *fresh,
                 const int *left, PyObject *q, PyObject *q_first, PyObject *fed, PyObject *rows_tab, PyObject *least,
                 int n_extra, const int *d_keys, const double *d_vals, int n_d,
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
    /* a row's next chunk start and its value at its chunk's start (the chance its chunk is projected) */
    int *chunk_at = malloc(sizeof(int) * (size_t)(B > 0 ? B : 1));
    double *chunk_p = calloc((size_t)(B > 0 ? B : 1), sizeof(double)), projected = 0.0;
    if (!heap || !taken || !asked || !chunk_at || !chunk_p) {
        free(heap); free(taken); free(asked); free(chunk_at); free(chunk_p);
        return -2;
    }
    for (int r = 0; r < B; r++) chunk_at[r] = CHUNK;
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
            if (m < CHUNK) {
                projected += 1.0;
            } else {
                if (m == chunk_at[r]) { /* (a row's positions are read in order) */
                    chunk_p[r] = p;
                    chunk_at[r] = 2 * m + CHUNK;
                }
                projected += chunk_p[r];
            }
            const long k = (long)projected;
            const double rows_k = item(rows_tab, k);
            double added = item(fed, t) + (rows_k + (projected - (double)k) * (item(rows_tab, k + 1) - rows_k));
            if (pad != 0.0) added += pad * (double)(B * (width - 1) - t);
            if (t > most && factor * added > cap) break;
            const double rate_t = expected / (base + factor * added + (double)t * read);
            if (rate_t > best) {
                best_t = t;
                best = rate_t;
                inv_best = 1.0 / rate_t;
                best_expected = expected;
            } else if (p * inv_best < factor * (item(least, t) - pad) + read) {
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
    free(heap); free(taken); free(asked); free(chunk_at); free(chunk_p);
    return rc;
}

/* a list or tuple of numbers (at least n_min long) as n doubles, n = its length (PyMem_Free the result) */
static double *doubles_of(PyObject *numbers, Py_ssize_t n_min, Py_ssize_t *n_out) {
    PyObject *seq = PySequence_Fast(numbers, "expected a list or tuple of numbers");
    if (!seq) return NULL;
    const Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    double *out = n < n_min ? NULL : PyMem_Malloc(sizeof(double) * (size_t)(n > 0 ? n : 1));
    if (n < n_min) {
        PyErr_SetString(PyExc_IndexError, "list index out of range");
    } else if (!out) {
        PyErr_NoMemory();
    } else {
        for (Py_ssize_t i = 0; i < n; i++) {
            PyObject *x = PySequence_Fast_GET_ITEM(seq, i);
            out[i] = PyFloat_CheckExact(x) ? PyFloat_AS_DOUBLE(x) : PyFloat_AsDouble(x);
            if (out[i] == -1.0 && PyErr_Occurred()) {
                PyMem_Free(out);
                out = NULL;
                break;
            }
        }
    }
    Py_DECREF(seq);
    if (out && n_out) *n_out = n;
    return out;
}

/* the first n items of a list of ints as C ints */
static int ints_of(PyObject *list, Py_ssize_t n, int *out) {
    if (!PyList_Check(list) || PyList_GET_SIZE(list) < n) {
        PyErr_SetString(PyExc_IndexError, "a row's list is shorter than its limit");
        return -1;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        const long v = PyLong_AsLong(PyList_GET_ITEM(list, i));
        if (v == -1 && PyErr_Occurred()) return -1;
        out[i] = (int)v;
    }
    return 0;
}

/* a list with items 0 .. m (m < 0: any list) */
static int long_enough(PyObject *list, long m) {
    return PyList_Check(list) && PyList_GET_SIZE(list) > (m > 0 ? m : 0);
}

/* a dict {rows: seconds} as keys and values */
static int table_of(PyObject *dict, int **keys, double **vals, int *n) {
    if (!PyDict_Check(dict)) {
        PyErr_SetString(PyExc_TypeError, "a drafter's table must be a dict");
        return -1;
    }
    const Py_ssize_t size = PyDict_GET_SIZE(dict);
    *keys = PyMem_Malloc(sizeof(int) * (size_t)(size > 0 ? size : 1));
    *vals = PyMem_Malloc(sizeof(double) * (size_t)(size > 0 ? size : 1));
    if (!*keys || !*vals) {
        PyErr_NoMemory();
        return -1;
    }
    Py_ssize_t pos = 0, i = 0;
    PyObject *k, *v;
    while (PyDict_Next(dict, &pos, &k, &v)) {
        const long key = PyLong_AsLong(k);
        const double val = PyFloat_AsDouble(v);
        if (PyErr_Occurred()) return -1;
        (*keys)[i] = (int)key;
        (*vals)[i++] = val;
    }
    *n = (int)i;
    return 0;
}

/* a decode state's row as the batched choice reads it: its sentence's counts (borrowed; NULL where it has none),
   whether its drafter has not started, and the tokens it has left (BatchedChoice._tokens_left) */
static int row_of(PyObject *st, PyObject **counts, int *fresh, int *left) {
    PyObject *extra = PyObject_GetAttr(st, s_extra), *src = NULL, *prefix = NULL;
    int rc = -1;
    if (!extra) return -1;
    if (!PyDict_Check(extra)) {
        PyErr_SetString(PyExc_TypeError, "a state's extra must be a dict");
        goto done;
    }
    PyObject *sent = PyDict_GetItemWithError(extra, s_policy_counts);
    if (!sent && PyErr_Occurred()) goto done;
    *counts = sent == Py_None ? NULL : sent; /* (the dict holds it while the choice runs) */
    PyObject *started = PyDict_GetItemWithError(extra, s_drafter_started);
    if (!started && PyErr_Occurred()) goto done;
    const int on = started ? PyObject_IsTrue(started) : 0;
    if (on < 0) goto done;
    *fresh = !on;
    if (!(src = PyObject_GetAttr(st, s_src_list)) || !(prefix = PyObject_GetAttr(st, s_prefix))) goto done;
    const Py_ssize_t n_src = PyObject_Length(src), n_prefix = PyObject_Length(prefix);
    if (n_src < 0 || n_prefix < 0) goto done;
    *left = n_src + 1 - n_prefix > 1 ? (int)(n_src + 1 - n_prefix) : 1;
    rc = 0;
done:
    Py_DECREF(extra);
    Py_XDECREF(src);
    Py_XDECREF(prefix);
    return rc;
}

/* choose_fused(limits, states, q, q_first, extra, least, drafter_s, start_s, par, most): the batched choice (fused
   above) for B = len(limits) rows, reading each row's state (row_of): its sentence's (reach, acc) counts, or none;
   whether its drafter has started; the tokens it has left. drafter_s / start_s: {rows asked: seconds}; par: the nine
   numbers fused reads. Returns (positions taken, draft lengths, tokens per second promised, tokens expected,
   positions read), or (-1, the tables' length needed) where extra / least are too short. */
static PyObject *choose_fused(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 11) {
        PyErr_SetString(PyExc_TypeError, "choose_fused(limits, states, q, q_first, fed, rows, least, drafter_s, "
                                         "start_s, par, most)");
        return NULL;
    }
    if (lists(args, 2) < 0) return NULL;
    const Py_ssize_t B = PyList_GET_SIZE(args[0]);
    const long most = PyLong_AsLong(args[10]);
    if (most == -1 && PyErr_Occurred()) return NULL;
    if (PyList_GET_SIZE(args[1]) != B) {
        PyErr_SetString(PyExc_ValueError, "limits and states must have one item a row");
        return NULL;
    }
    PyObject *result = NULL;
    const size_t rows = (size_t)(B > 0 ? B : 1);
    int *ints = PyMem_Calloc(5 * rows, sizeof(int)), *d_keys = NULL, *s_keys = NULL;
    PyObject **reach = PyMem_Calloc(rows, sizeof(PyObject *)), **acc = PyMem_Calloc(rows, sizeof(PyObject *));
    double *d_vals = NULL, *s_vals = NULL, *par = NULL;
    int n_d = 0, n_s = 0;
    if (!ints || !reach || !acc) {
        PyErr_NoMemory();
        goto done;
    }
    int *limits = ints, *fresh = ints + B, *left = ints + 2 * B, *n_out = ints + 3 * B, *read_out = ints + 4 * B;
    if (ints_of(args[0], B, limits) < 0) goto done;
    long most_limit = 0;
    for (Py_ssize_t r = 0; r < B; r++) {
        PyObject *sent = NULL;
        if (row_of(PyList_GET_ITEM(args[1], r), &sent, fresh + r, left + r) < 0) goto done;
        if (limits[r] > most_limit) most_limit = limits[r];
        if (!sent) continue;
        if (!PyTuple_Check(sent) || PyTuple_GET_SIZE(sent) != 2 || !long_enough(PyTuple_GET_ITEM(sent, 0), limits[r])
            || !long_enough(PyTuple_GET_ITEM(sent, 1), limits[r])) {
            PyErr_SetString(PyExc_ValueError, "a row's counts must be a (reach, acc) tuple of lists as long as its "
                                              "limit, or None");
            goto done;
        }
        reach[r] = PyTuple_GET_ITEM(sent, 0);
        acc[r] = PyTuple_GET_ITEM(sent, 1);
    }
    PyObject *q = args[2], *q_first = args[3], *fed = args[4], *rows_tab = args[5], *least = args[6];
    if (!long_enough(q, most_limit) || !long_enough(q_first, most_limit) || !PyList_Check(fed) ||
        !PyList_Check(rows_tab) || !long_enough(least, PyList_GET_SIZE(fed) - 1)) {
        PyErr_SetString(PyExc_ValueError, "q and q_first must be lists as long as every limit; fed, rows and least "
                                          "lists, least as long as fed");
        goto done;
    }
    const Py_ssize_t n_tab = PyList_GET_SIZE(fed) < PyList_GET_SIZE(rows_tab) ? PyList_GET_SIZE(fed)
                                                                                : PyList_GET_SIZE(rows_tab);
    if (!(par = doubles_of(args[9], 9, NULL))) goto done;
    if (table_of(args[7], &d_keys, &d_vals, &n_d) < 0 || table_of(args[8], &s_keys, &s_vals, &n_s) < 0) goto done;
    double out[2] = {0.0, 0.0};
    const int taken = fused((int)B, limits, reach, acc, fresh, left, q, q_first, fed, rows_tab, least, (int)n_tab,
                            d_keys, d_vals, n_d, s_keys, s_vals, n_s, par, (int)most, n_out, out, read_out);
    if (PyErr_Occurred()) goto done; /* (an item that is not a number) */
    if (taken == -2) {
        PyErr_NoMemory();
        goto done;
    }
    if (taken == -1) {
        result = Py_BuildValue("(ii)", -1, *read_out);
        goto done;
    }
    PyObject *n_list = PyList_New(B);
    if (!n_list) goto done;
    for (Py_ssize_t r = 0; r < B; r++) {
        PyObject *x = PyLong_FromLong(n_out[r]);
        if (!x) {
            Py_DECREF(n_list);
            goto done;
        }
        PyList_SET_ITEM(n_list, r, x);
    }
    result = Py_BuildValue("(iNddi)", taken, n_list, out[0], out[1], *read_out);
done:
    PyMem_Free(ints);
    PyMem_Free((void *)reach);
    PyMem_Free((void *)acc);
    PyMem_Free(par);
    PyMem_Free(d_keys);
    PyMem_Free(d_vals);
    PyMem_Free(s_keys);
    PyMem_Free(s_vals);
    return result;
}

/* fit_add(fit, predicted, seen): measured_costs._ExtraFit.add on a fit's slots (decay, sums, line): the batch-1 loop
   counts a drafted pass with it (its arithmetic took 2-3 us a pass in Python). Returns the new line. */
static PyObject *fit_add(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 3) {
        PyErr_SetString(PyExc_TypeError, "fit_add(fit, predicted, seen)");
        return NULL;
    }
    PyObject *fit = args[0], *decay_o = NULL, *sums_o = NULL, *line_o = NULL, *sums = NULL, *line = NULL;
    double d, v[5], l[2];
    const double x = PyFloat_AsDouble(args[1]);
    double seen = PyFloat_AsDouble(args[2]);
    if (PyErr_Occurred()) return NULL;
    if (!(decay_o = PyObject_GetAttrString(fit, "decay")) || !(sums_o = PyObject_GetAttrString(fit, "sums")) ||
        !(line_o = PyObject_GetAttrString(fit, "line")))
        goto done;
    d = PyFloat_AsDouble(decay_o);
    double *sums_v = doubles_of(sums_o, 5, NULL), *line_v = sums_v ? doubles_of(line_o, 2, NULL) : NULL;
    if (line_v) {
        memcpy(v, sums_v, sizeof v);
        memcpy(l, line_v, sizeof l);
    }
    PyMem_Free(sums_v);
    PyMem_Free(line_v);
    if (!line_v || PyErr_Occurred()) goto done;
    double n = v[0], sx = v[1], sy = v[2], sxx = v[3], sxy = v[4];
    if (n == 0.0) { /* the calibration as a prior: three passes at 0.5, 1 and 2 times this prediction */
        n = 3.0;
        sx = 3.5 * x;
        sxx = 5.25 * x * x;
        sy = sx;
        sxy = sxx;
    }
    const double expect = l[0] + l[1] * x, low = expect / 3.0, high = 3.0 * expect;
    if (low > seen) seen = low; /* min(max(seen, low), high), as Python's min and max pick */
    if (high < seen) seen = high;
    n = d * n + 1.0;
    sx = d * sx + x;
    sy = d * sy + seen;
    sxx = d * sxx + x * x;
    sxy = d * sxy + x * seen;
    /* _ExtraFit.solve */
    double fixed = 0.0, factor = 1.0;
    if (!(n <= 0 || sx <= 0)) {
        const double mx = sx / n, my = sy / n, var = sxx / n - mx * mx;
        factor = (n >= 3 && var > pow_(0.25 * mx, 2.0)) ? (sxy / n - mx * my) / var : sy / sx;
        if (0.25 > factor) factor = 0.25;
        if (8.0 < factor) factor = 8.0;
        fixed = my - factor * mx;
        if (0.0 > fixed) fixed = 0.0;
    }
    if (!(sums = Py_BuildValue("(ddddd)", n, sx, sy, sxx, sxy)) || !(line = Py_BuildValue("(dd)", fixed, factor)) ||
        PyObject_SetAttrString(fit, "sums", sums) < 0 || PyObject_SetAttrString(fit, "line", line) < 0)
        Py_CLEAR(line);
done:
    Py_XDECREF(decay_o);
    Py_XDECREF(sums_o);
    Py_XDECREF(line_o);
    Py_XDECREF(sums);
    return line;
}

static PyMethodDef methods[] = {
    {"count_sentence", (PyCFunction)(void (*)(void))count_sentence, METH_FASTCALL, "count a sentence's iteration"},
    {"best_length", (PyCFunction)(void (*)(void))best_length, METH_FASTCALL, "a sentence's next draft length"},
    {"choose_fused", (PyCFunction)(void (*)(void))choose_fused, METH_FASTCALL, "a batch's draft lengths"},
    {"fit_add", (PyCFunction)(void (*)(void))fit_add, METH_FASTCALL, "count a drafted pass in a fit"},
    {"count_rows", (PyCFunction)(void (*)(void))count_rows, METH_FASTCALL, "count a batched pass's rows"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, .m_name = "_fd_choice", .m_size = -1, .m_methods = methods};

PyMODINIT_FUNC PyInit__fd_choice(void) {
    if (!(s_last_drafted = PyUnicode_InternFromString("last_drafted")) ||
        !(s_last_accepted = PyUnicode_InternFromString("last_accepted")) ||
        !(s_extra = PyUnicode_InternFromString("extra")) ||
        !(s_policy_counts = PyUnicode_InternFromString("policy_counts")) ||
        !(s_drafter_started = PyUnicode_InternFromString("drafter_started")) ||
        !(s_src_list = PyUnicode_InternFromString("src_list")) || !(s_prefix = PyUnicode_InternFromString("prefix")))
        return NULL;
    return PyModule_Create(&module);
}
