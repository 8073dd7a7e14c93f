/* The cost-aware policy's choices in C: a Python extension module (_fd_choice), compiled on first use.

   - The batched choice on a fused pass (a CPU's pass over the rows' real positions), choose_fused: the same choice as
     the Python loop of BatchedChoice.choose_batch, reading the same positions in the same order. In Python each
     position read cost about 2.7 us (a heap of rows' next positions, a generator, a closure), 5-8 % of a batched decode
     at B = 2-8 on the fast backend. It reads the rows' counts and the policy's tables from the Python objects
     themselves, and each row's counts, drafter start and tokens left from its decode state: handed over through
     ctypes (each row's counts copied to C ints, the tables kept as C arrays), the hand-over took 30-50 us of a
     45-65 us choice.
   - The counting of a batched pass's rows (count_batch): each row's iteration into its sentence's counts and the
     input's, as AcceptanceCounts.observe_rows counts them (in Python 3-4 us a row, and 8-9 us a sentence's first).
   - The observation of a drafted batched pass on a fused pass (observe_fused): its judgement against its choice's
     promise and the fit of what its drafts added, as MeasuredCosts.observe_pass makes them (13-24 us a pass in Python
     between two passes of the C backend at B = 2 to 8).
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
#include <time.h>

/* libm's pow, as Python's float ** float calls it (the compiler would turn pow(x, 2.0) into x * x) */
static double (*volatile pow_)(double, double) = pow;

/* obj.name, read from obj's own dict where it is there, else getattr. The attributes read here are plain instance
   attributes (no descriptor of that name on their types), so the type's lookup -- its method cache, read cold after a
   pass, the classes of the policy's MRO where that misses -- can be skipped: it took about half of what reading an
   attribute took between two passes of the C backend. */
static PyObject *attr_of(PyObject *obj, PyObject *name) {
    PyObject **dict = _PyObject_GetDictPtr(obj);
    if (dict && *dict) {
        PyObject *x = PyDict_GetItemWithError(*dict, name);
        if (x) return Py_NewRef(x);
        if (PyErr_Occurred()) return NULL;
    }
    return PyObject_GetAttr(obj, name);
}

/* obj.name = value: into obj's own dict where the attribute is there already (attr_of), else setattr */
static int set_attr(PyObject *obj, PyObject *name, PyObject *value) {
    PyObject **dict = _PyObject_GetDictPtr(obj);
    if (dict && *dict) {
        if (PyDict_GetItemWithError(*dict, name)) return PyDict_SetItem(*dict, name, value);
        if (PyErr_Occurred()) return -1;
    }
    return PyObject_SetAttr(obj, name, value);
}

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

/* list[m] += x, as Python adds: an int count (the lists' own) or a float one (halved counts, or as a test sets them) */
static int add_to(PyObject *list, Py_ssize_t m, long x) {
    PyObject *old = PyList_GET_ITEM(list, m), *sum;
    long v;
    if (PyFloat_CheckExact(old)) {
        sum = PyFloat_FromDouble(PyFloat_AS_DOUBLE(old) + (double)x);
    } else if (PyLong_CheckExact(old) && (v = PyLong_AsLong(old)) != -1 && v < LONG_MAX - (x > 0 ? x : 0) &&
               v > LONG_MIN - (x < 0 ? x : 0)) {
        sum = PyLong_FromLong(v + x);
    } else {
        PyErr_Clear();
        PyObject *y = PyLong_FromLong(x);
        sum = y ? PyNumber_Add(old, y) : NULL;
        Py_XDECREF(y);
    }
    if (!sum) return -1;
    PyList_SET_ITEM(list, m, sum);
    Py_DECREF(old);
    return 0;
}

static int add_one(PyObject *list, Py_ssize_t m) {
    return add_to(list, m, 1);
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
    PyObject *x = attr_of(obj, name);
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

/* AcceptanceCounts.observe_rows's loop from row *r_io on: each row asked for a draft (asked[r] > 0) has its iteration
   added to its sentence's counts (count_sentence; a sentence's first drafted iteration makes them, as
   _count_sentence does, and is also counted in ends_first / gots_first) and to the input's counts waiting to be
   folded (ends[top] += 1, gots[got] += 1), *stale_io going up by one a row. Stops after the row that makes
   4 * stale >= reach_1 (the policy refreshes its rates there, as _count does). Leaves in *r_io the row after the last
   counted (or len(states)), and the tokens accepted, rows counted, deepest position counted and positions past their
   first the pass projected for the rows counted (MeasuredCosts._projected_rows). 0, or -1 an error. */
static int count_core(PyObject *states, PyObject *asked, Py_ssize_t *r_io, long horizon, PyObject *ends,
                      PyObject *gots, PyObject *ends_first, PyObject *gots_first, long *stale_io, double reach_1,
                      long *accepted_out, long *counted_out, long *deepest_out, long *projected_out) {
    const Py_ssize_t n = PyList_GET_SIZE(states);
    long accepted_sum = 0, counted = 0, deepest = 0, projected = 0, stale = *stale_io;
    Py_ssize_t r = *r_io < 0 ? 0 : *r_io;
    for (; r < n; r++) {
        const long want = PyLong_AsLong(PyList_GET_ITEM(asked, r));
        if (want == -1 && PyErr_Occurred()) return -1;
        if (!want) continue;
        PyObject *st = PyList_GET_ITEM(states, r);
        long drafted, accepted, top, got;
        if (int_attr(st, s_last_drafted, &drafted) < 0 || int_attr(st, s_last_accepted, &accepted) < 0) return -1;
        projected += projected_rows(drafted, accepted);
        if (drafted > 0) { /* (_reached, for a row that was asked) */
            top = accepted + 1 < drafted ? accepted + 1 : drafted;
            if (horizon < top) top = horizon;
            got = accepted < top ? accepted : top;
        } else {
            top = 1;
            got = 0;
        }
        PyObject *extra = attr_of(st, s_extra);
        if (!extra) return -1;
        if (!PyDict_Check(extra)) {
            Py_DECREF(extra);
            PyErr_SetString(PyExc_TypeError, "a state's extra must be a dict");
            return -1;
        }
        PyObject *sent = PyDict_GetItemWithError(extra, s_policy_counts);
        const int first = !sent || sent == Py_None;
        if (!PyErr_Occurred() && first) sent = new_counts(extra, horizon);
        Py_DECREF(extra); /* (the state holds the dict, and the dict the counts) */
        if (!sent) {
            if (!PyErr_Occurred()) PyErr_SetString(PyExc_RuntimeError, "a row's counts could not be made");
            return -1;
        }
        if (!PyTuple_Check(sent) || PyTuple_GET_SIZE(sent) != 2 || !PyList_Check(PyTuple_GET_ITEM(sent, 0)) ||
            !PyList_Check(PyTuple_GET_ITEM(sent, 1))) {
            PyErr_SetString(PyExc_ValueError, "a row's counts must be a (reach, acc) tuple of lists");
            return -1;
        }
        PyObject *reach = PyTuple_GET_ITEM(sent, 0), *acc = PyTuple_GET_ITEM(sent, 1);
        if (top >= PyList_GET_SIZE(reach) || top >= PyList_GET_SIZE(acc) || top >= PyList_GET_SIZE(ends) ||
            top >= PyList_GET_SIZE(gots) || top >= PyList_GET_SIZE(ends_first) || top >= PyList_GET_SIZE(gots_first)
            || got < 0) {
            PyErr_SetString(PyExc_IndexError, "counts shorter than the draft counted");
            return -1;
        }
        if (count_into(reach, acc, top, got) < 0) return -1;
        if (first && (add_one(ends_first, top) < 0 || add_one(gots_first, got) < 0)) return -1;
        if (add_one(ends, top) < 0 || add_one(gots, got) < 0) return -1;
        accepted_sum += accepted;
        counted++;
        if (top > deepest) deepest = top;
        stale++;
        if (4.0 * (double)stale >= reach_1) { /* (exact: both sides are small integers or halves) */
            r++;
            break;
        }
    }
    *r_io = r;
    *stale_io = stale;
    *accepted_out = accepted_sum;
    *counted_out = counted;
    *deepest_out = deepest;
    *projected_out = projected;
    return 0;
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
   reads it: copied whole, every row's counts cost more than the choice (each item its own object, each a cache miss
   after a pass of the C backend; the tables, read at every position, are contiguous doubles: Doubles below). The
   caller checks the list's length; an error is left set. */
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
                 const int *left, PyObject *q, PyObject *q_first, const double *fed, const double *rows_tab,
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
    /* (one block: a row's next chunk's chance, the heap, the rows of the positions read, a row's next chunk start,
       whether a row was asked) */
    const size_t rows = (size_t)(B > 0 ? B : 1), n_taken = (size_t)(total > 0 ? total : 1);
    char *block = malloc(rows * (sizeof(double) + sizeof(Position) + sizeof(int) + 1) + n_taken * sizeof(int));
    if (!block) return -2;
    double *chunk_p = (double *)block, projected = 0.0;
    Position *heap = (Position *)(chunk_p + rows);
    int *taken = (int *)(heap + rows), *chunk_at = taken + n_taken;
    char *asked = (char *)(chunk_at + rows);
    memset(chunk_p, 0, rows * sizeof(double));
    memset(asked, 0, rows);
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
            const double rows_k = rows_tab[k];
            double added = fed[t] + (rows_k + (projected - (double)k) * (rows_tab[k + 1] - rows_k));
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
    free(block);
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

/* A table of numbers as C doubles: the policy keeps its fused tables as array('d') (contiguous: read after a pass of
   the C backend, a list's float objects were each a cache miss), read in place; a list is copied. */
typedef struct {
    const double *p;
    Py_ssize_t n;
    Py_buffer view;
    double *owned;
} Doubles;

static int doubles_open(PyObject *numbers, Doubles *d) {
    memset(d, 0, sizeof *d);
    if (PyList_Check(numbers)) {
        if (!(d->owned = doubles_of(numbers, 0, &d->n))) return -1;
        d->p = d->owned;
        return 0;
    }
    if (PyObject_GetBuffer(numbers, &d->view, PyBUF_FORMAT | PyBUF_C_CONTIGUOUS) < 0) return -1;
    const char *f = d->view.format;
    if (d->view.ndim != 1 || d->view.itemsize != (Py_ssize_t)sizeof(double) || !f ||
        strcmp(f + (*f == '<' || *f == '=' || *f == '@'), "d")) {
        PyBuffer_Release(&d->view);
        PyErr_SetString(PyExc_TypeError, "a table must be a list of numbers or a contiguous buffer of doubles");
        return -1;
    }
    d->p = d->view.buf;
    d->n = d->view.len / (Py_ssize_t)sizeof(double);
    return 0;
}

static void doubles_close(Doubles *d) {
    if (d->view.obj) PyBuffer_Release(&d->view);
    PyMem_Free(d->owned);
    d->owned = NULL;
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
    PyObject *extra = attr_of(st, s_extra), *src = NULL, *prefix = NULL;
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
    if (!(src = attr_of(st, s_src_list)) || !(prefix = attr_of(st, s_prefix))) goto done;
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

/* The batched choice (fused above) for the B rows of `states` with draft limits `limits`, reading each row's state
   (row_of): its sentence's (reach, acc) counts, or none; whether its drafter has started; the tokens it has left.
   q / q_first: the input's rates; fed_o / rows_o / least_o: the fused tables; drafter_s / start_s: {rows asked:
   seconds}; par: the nine numbers fused reads. Returns (positions taken, draft lengths, tokens per second promised,
   tokens expected, positions read), or (-1, the tables' length needed) where the tables are too short. */
static PyObject *choose_rows(Py_ssize_t B, const int *limits, PyObject *states, PyObject *q, PyObject *q_first,
                             PyObject *fed_o, PyObject *rows_o, PyObject *least_o, PyObject *drafter_s,
                             PyObject *start_s, const double *par, long most) {
    PyObject *result = NULL;
    const size_t rows = (size_t)(B > 0 ? B : 1);
    int *ints = PyMem_Calloc(4 * rows, sizeof(int)), *d_keys = NULL, *s_keys = NULL;
    PyObject **counts = PyMem_Calloc(2 * rows, sizeof(PyObject *));
    double *d_vals = NULL, *s_vals = NULL;
    int n_d = 0, n_s = 0;
    Doubles fed = {0}, rows_tab = {0}, least = {0};
    if (!ints || !counts) {
        PyErr_NoMemory();
        goto done;
    }
    PyObject **reach = counts, **acc = counts + B;
    int *fresh = ints, *left = ints + B, *n_out = ints + 2 * B, *read_out = ints + 3 * B;
    long most_limit = 0;
    for (Py_ssize_t r = 0; r < B; r++) {
        PyObject *sent = NULL;
        if (row_of(PyList_GET_ITEM(states, r), &sent, fresh + r, left + r) < 0) goto done;
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
    if (!long_enough(q, most_limit) || !long_enough(q_first, most_limit)) {
        PyErr_SetString(PyExc_ValueError, "q and q_first must be lists as long as every limit");
        goto done;
    }
    if (doubles_open(fed_o, &fed) < 0 || doubles_open(rows_o, &rows_tab) < 0 || doubles_open(least_o, &least) < 0)
        goto done;
    if (least.n < fed.n) {
        PyErr_SetString(PyExc_ValueError, "the least steps must be as long as the fed tokens' table");
        goto done;
    }
    const Py_ssize_t n_tab = fed.n < rows_tab.n ? fed.n : rows_tab.n;
    if (table_of(drafter_s, &d_keys, &d_vals, &n_d) < 0 || table_of(start_s, &s_keys, &s_vals, &n_s) < 0) goto done;
    double out[2] = {0.0, 0.0};
    const int taken = fused((int)B, limits, reach, acc, fresh, left, q, q_first, fed.p, rows_tab.p, least.p,
                            (int)n_tab, d_keys, d_vals, n_d, s_keys, s_vals, n_s, par, (int)most, n_out, out, read_out);
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
    doubles_close(&fed);
    doubles_close(&rows_tab);
    doubles_close(&least);
    PyMem_Free(ints);
    PyMem_Free((void *)counts);
    PyMem_Free(d_keys);
    PyMem_Free(d_vals);
    PyMem_Free(s_keys);
    PyMem_Free(s_vals);
    return result;
}

/* choose_fused(limits, states, q, q_first, fed, rows, least, drafter_s, start_s, par, most): choose_rows for
   B = len(limits) rows. */
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
    int *limits = PyMem_Calloc((size_t)(B > 0 ? B : 1), sizeof(int));
    double *par = NULL;
    if (!limits) return PyErr_NoMemory();
    if (ints_of(args[0], B, limits) == 0 && (par = doubles_of(args[9], 9, NULL)))
        result = choose_rows(B, limits, args[1], args[2], args[3], args[4], args[5], args[6], args[7], args[8], par,
                             most);
    PyMem_Free(limits);
    PyMem_Free(par);
    return result;
}

/* fold(ends, gots, reach, acc, top): AcceptanceCounts._fold for one set of counts -- the observations that end at each
   position m <= top (reached up to m: ends[m], accepted up to m: gots[m]) added to the counts of every position up to
   theirs, and set to 0 (in Python the loop took 20-30 us of a refresh between two passes of the C backend) */
static PyObject *fold(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 5) {
        PyErr_SetString(PyExc_TypeError, "fold(ends, gots, reach, acc, top)");
        return NULL;
    }
    if (lists(args, 4) < 0) return NULL;
    const long top = PyLong_AsLong(args[4]);
    if (top == -1 && PyErr_Occurred()) return NULL;
    for (int i = 0; i < 4; i++)
        if (PyList_GET_SIZE(args[i]) <= top) {
            PyErr_SetString(PyExc_IndexError, "the counts must reach position top");
            return NULL;
        }
    PyObject *ends = args[0], *gots = args[1], *reach = args[2], *acc = args[3], *zero = PyLong_FromLong(0);
    if (!zero) return NULL;
    long reached = 0, got = 0;
    for (long m = top; m >= 1; m--) {
        const long e = PyLong_AsLong(PyList_GET_ITEM(ends, m)), g = PyLong_AsLong(PyList_GET_ITEM(gots, m));
        if (PyErr_Occurred()) goto fail;
        reached += e;
        got += g;
        for (int i = 0; i < 2; i++) {
            PyObject *list = i ? gots : ends, *old = PyList_GET_ITEM(list, m);
            Py_INCREF(zero);
            PyList_SET_ITEM(list, m, zero);
            Py_DECREF(old);
        }
        if (reached && (add_to(reach, m, reached) < 0 || add_to(acc, m, got) < 0)) goto fail;
    }
    Py_DECREF(zero);
    Py_RETURN_NONE;
fail:
    Py_DECREF(zero);
    return NULL;
}

/* rates(q, acc, reach, acc_first, reach_first, weight, prior, top, horizon): AcceptanceCounts._refresh's rates from
   the counts -- q by position in place (each leaning on the one before it, past top all the way), the first drafts'
   rates (q itself where no first draft was counted, else a copy with their own counts' positions), and a sentence's
   first draft by them (the value of each position worth 1 % or more, and the tokens a draft of n expects). Returns
   (q_first, first_p, first_e). */
static PyObject *rates(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 9) {
        PyErr_SetString(PyExc_TypeError, "rates(q, acc, reach, acc_first, reach_first, weight, prior, top, horizon)");
        return NULL;
    }
    if (lists(args, 5) < 0) return NULL;
    PyObject *q = args[0], *acc = args[1], *reach = args[2], *acc_first = args[3], *reach_first = args[4];
    const double w = PyFloat_AsDouble(args[5]), prior = PyFloat_AsDouble(args[6]);
    const long top = PyLong_AsLong(args[7]), horizon = PyLong_AsLong(args[8]);
    if (PyErr_Occurred()) return NULL;
    const Py_ssize_t n = PyList_GET_SIZE(q);
    if (top < 1 || top > horizon || n < horizon + 1 || PyList_GET_SIZE(acc) < n || PyList_GET_SIZE(reach) < n ||
        PyList_GET_SIZE(acc_first) < n || PyList_GET_SIZE(reach_first) < n) {
        PyErr_SetString(PyExc_ValueError, "1 <= top <= horizon, and every list as long as q, past the horizon");
        return NULL;
    }
    double prev = prior, a, r;
    for (long m = 1; m <= horizon; m++) { /* (past top: the last rate, all the way) */
        if (m <= top) {
            if (number_at(acc, m, &a) < 0 || number_at(reach, m, &r) < 0) return NULL;
            prev = (a + w * prev) / (r + w);
        }
        PyObject *x = PyFloat_FromDouble(prev), *old = PyList_GET_ITEM(q, m);
        if (!x) return NULL;
        PyList_SET_ITEM(q, m, x);
        Py_DECREF(old);
    }
    PyObject *q_first = NULL, *first_p = NULL, *first_e = NULL, *result = NULL;
    double r1;
    if (number_at(reach_first, 1, &r1) < 0) return NULL;
    if (r1 != 0.0) {
        /* positions no first draft reached keep q; past top they are read only where a first draft reached one */
        double r0;
        int past = 0;
        if (number_at(reach_first, 0, &r0) < 0) return NULL;
        for (Py_ssize_t m = top + 1; m < PyList_GET_SIZE(reach_first) && !past; m++) {
            double rm;
            if (number_at(reach_first, m, &rm) < 0) return NULL;
            past = rm != 0.0;
        }
        const Py_ssize_t lo = (r0 != 0.0 || past) ? 0 : 1, hi = (r0 != 0.0 || past) ? n : top + 1;
        if (!(q_first = PyList_GetSlice(q, 0, n))) return NULL;
        for (Py_ssize_t m = lo; m < hi; m++) {
            double rm, am, qm;
            if (number_at(reach_first, m, &rm) < 0) goto done;
            if (rm == 0.0) continue;
            if (number_at(acc_first, m, &am) < 0 || number_at(q, m, &qm) < 0) goto done;
            PyObject *x = PyFloat_FromDouble((am + w * qm) / (rm + w)), *old = PyList_GET_ITEM(q_first, m);
            if (!x) goto done;
            PyList_SET_ITEM(q_first, m, x);
            Py_DECREF(old);
        }
    } else {
        Py_INCREF(q);
        q_first = q;
    }
    if (!(first_p = PyList_New(0)) || !(first_e = PyList_New(0))) goto done;
    double p = 1.0, e = 1.0, qm;
    for (long m = 0; m <= horizon; m++) {
        if (m > 0) {
            if (number_at(q_first, m, &qm) < 0) goto done;
            p *= qm;
            if (p < 0.01) break;
            e += p;
        }
        PyObject *pv = PyFloat_FromDouble(p), *ev = PyFloat_FromDouble(e);
        const int bad = !pv || !ev || PyList_Append(first_p, pv) < 0 || PyList_Append(first_e, ev) < 0;
        Py_XDECREF(pv);
        Py_XDECREF(ev);
        if (bad) goto done;
    }
    result = PyTuple_Pack(3, q_first, first_p, first_e);
done:
    Py_XDECREF(q_first);
    Py_XDECREF(first_p);
    Py_XDECREF(first_e);
    return result;
}

/* The terms a batched choice prices with (BatchedChoice.choose_batch, MeasuredCosts), from the policy's own
   measurements: made in Python before every choice they took 20-25 us of a 35 us choice at B = 2 on the C backend,
   about as much as the choice itself. Each is what the Python method named returns, bit for bit. */
static PyObject *s_batch_greedy, *s_greedy, *s_batch_fits, *s_extra_fixed, *s_extra_factor, *s_real_tokens_only,
    *s_step_s, *s_batch, *s_realized, *s_margin, *s_extras, *s_weight, *s_read_s, *s_pad_s, *s_bet_per_row,
    *s_probe_rows, *s_probe_len, *s_q, *s_q_first, *s_drafter_s, *s_start_s, *s_max_draft, *s_horizon, *s_line,
    *s_fed, *s_rows_fused, *s_last, *s_pass_projected, *s_promised, *s_iter_accepted, *s_iter_s, *s_judged, *s_pending,
    *s_fit_batch, *s_cost, *s_table, *s_fit, *s_ends, *s_gots, *s_ends_first, *s_gots_first, *s_stale, *s_reach,
    *s_version, *s_fold_top, *s_deepest, *s_refresh, *s_skipped_s, *s_observe_read, *s_batch_hold_len, *s_batch_skips, *s_standing, *s_cost_for,
    *s_choose_batch, *s_priced_in_c, *s_observe_handed_back, *s_batch_hold, *s_batch_hold_rows, *s_end_batch_hold,
    *s_waiting_iterations, *s_flush_iterations;

static int double_attr(PyObject *obj, PyObject *name, double *out) {
    PyObject *x = attr_of(obj, name);
    if (!x) return -1;
    *out = PyFloat_AsDouble(x);
    Py_DECREF(x);
    return (*out == -1.0 && PyErr_Occurred()) ? -1 : 0;
}

/* whether an attribute is true (Python's truth): 1 or 0, -1 an error */
static int truth_attr(PyObject *obj, PyObject *name) {
    PyObject *x = attr_of(obj, name);
    const int on = x ? PyObject_IsTrue(x) : -1;
    Py_XDECREF(x);
    return on;
}

/* a long attribute set from C */
static int set_long(PyObject *obj, PyObject *name, long value) {
    PyObject *x = PyLong_FromLong(value);
    const int rc = x ? set_attr(obj, name, x) : -1;
    Py_XDECREF(x);
    return rc;
}

/* MeasuredCosts._scale's bound ratio: how much dearer a real greedy pass of `rows` rows (`measured` seconds) is than
   the calibration's (c_batch rows at c_step seconds), 1 to 4 */
static double scale_of(double measured, long rows, long c_batch, double c_step) {
    const double share = (double)rows / (double)c_batch;
    double scale = measured / (c_step * (1.0 < share ? 1.0 : share));
    if (1.0 > scale) scale = 1.0;
    if (4.0 < scale) scale = 4.0;
    return scale;
}

/* dict.get(key) of a {rows: seconds} dict: 1 found (*out), 0 not, -1 an error */
static int get_double(PyObject *dict, long key, double *out) {
    PyObject *k = PyLong_FromLong(key);
    if (!k) return -1;
    PyObject *v = PyDict_GetItemWithError(dict, k);
    Py_DECREF(k);
    if (!v) return PyErr_Occurred() ? -1 : 0;
    *out = PyFloat_AsDouble(v);
    return (*out == -1.0 && PyErr_Occurred()) ? -1 : 1;
}

/* the next (key, value) of a {rows: seconds} dict as C numbers: 1, or 0 at its end, -1 an error */
static int next_item(PyObject *dict, Py_ssize_t *pos, long *key, double *val) {
    PyObject *k, *v;
    if (!PyDict_Next(dict, pos, &k, &v)) return 0;
    *key = PyLong_AsLong(k);
    *val = PyFloat_AsDouble(v);
    return PyErr_Occurred() ? -1 : 1;
}

/* MeasuredCosts.greedy_pass_s(rows, cost): the measured greedy pass at rows, else between the nearest measured row
   counts (the calibration's batch, at its step, one of them), else in proportion to the nearest */
static int greedy_pass(PyObject *greedy, long rows, long c_batch, double c_step, double *out) {
    int got = get_double(greedy, rows, out);
    if (got) return got;
    if (rows == c_batch) { /* (not measured at rows: the calibration's) */
        *out = c_step;
        return 1;
    }
    long lo = 0, hi = 0, k;
    double v_lo = 0.0, v_hi = 0.0, v;
    int has_lo = 0, has_hi = 0, c_in = 0;
    Py_ssize_t pos = 0;
    while ((got = next_item(greedy, &pos, &k, &v)) == 1) {
        if (k == c_batch) c_in = 1;
        if (k < rows && (!has_lo || k > lo)) lo = k, v_lo = v, has_lo = 1;
        if (k > rows && (!has_hi || k < hi)) hi = k, v_hi = v, has_hi = 1;
    }
    if (got < 0) return -1;
    if (!c_in) {
        if (c_batch < rows && (!has_lo || c_batch > lo)) lo = c_batch, v_lo = c_step, has_lo = 1;
        if (c_batch > rows && (!has_hi || c_batch < hi)) hi = c_batch, v_hi = c_step, has_hi = 1;
    }
    if (has_lo && has_hi) {
        *out = v_lo + (v_hi - v_lo) * (double)(rows - lo) / (double)(hi - lo);
    } else {
        const long near = has_hi ? hi : lo;
        *out = (has_hi ? v_hi : v_lo) * (double)rows / (double)near;
    }
    return 1;
}

/* the first key of a {rows: seconds} dict nearest rows (only keys > above): 1 found, 0 none, -1 an error */
static int first_nearest(PyObject *dict, long rows, long above, long *near, double *val) {
    long k, best = -1;
    double v;
    int got;
    Py_ssize_t pos = 0;
    while ((got = next_item(dict, &pos, &k, &v)) == 1) {
        const long d = k > rows ? k - rows : rows - k;
        if (k > above && (best < 0 || d < best)) best = d, *near = k, *val = v;
    }
    return got < 0 ? -1 : best >= 0;
}

/* MeasuredCosts._batch_greedy_near(rows): this batch's greedy pass (1 found, 0 None, -1 an error) */
static int batch_greedy_near(PyObject *batch_greedy, PyObject *greedy, long rows, long c_batch, double c_step,
                             double *out) {
    long near = 0;
    double v = 0.0, at_rows, at_near;
    int got = get_double(batch_greedy, rows, out);
    if (got || !PyDict_GET_SIZE(batch_greedy)) return got;
    if ((got = first_nearest(batch_greedy, rows, LONG_MIN, &near, &v)) < 0) return -1;
    if (!(near / 2 <= rows && rows <= 2 * near)) return 0;
    if (greedy_pass(greedy, rows, c_batch, c_step, &at_rows) < 0 ||
        greedy_pass(greedy, near, c_batch, c_step, &at_near) < 0)
        return -1;
    *out = v * (at_rows != 0.0 && at_near != 0.0 ? at_rows / at_near : (double)rows / (double)near);
    return 1;
}

/* MeasuredCosts._run_greedy_near(rows): the run's greedy pass */
static int run_greedy_near(PyObject *greedy, long rows, double *out) {
    long near = 0;
    double v = 0.0;
    int got;
    if ((got = get_double(greedy, rows, out)) != 0 || rows <= 1) return got;
    if ((got = first_nearest(greedy, rows, 1, &near, &v)) <= 0) return got;
    if (!(near / 2 <= rows && rows <= 2 * near)) return 0;
    *out = v * (double)rows / (double)near;
    return 1;
}

/* _batch_greedy_near(rows) and, where it has none, _run_greedy_near(rows) */
static int greedy_near(PyObject *batch_greedy, PyObject *greedy, long rows, long c_batch, double c_step, double *out) {
    const int got = batch_greedy_near(batch_greedy, greedy, rows, c_batch, c_step, out);
    return got ? got : run_greedy_near(greedy, rows, out);
}

static long bit_length(long x) {
    long n = 0;
    for (; x > 0; x >>= 1) n++;
    return n;
}

/* a fit's line (fixed, factor) */
static int line_of(PyObject *fit, double *fixed, double *factor) {
    PyObject *line = attr_of(fit, s_line);
    if (!line) return -1;
    int rc = -1;
    if (!PyTuple_Check(line) || PyTuple_GET_SIZE(line) != 2) {
        PyErr_SetString(PyExc_TypeError, "a fit's line must be a (fixed, factor) tuple");
    } else {
        *fixed = PyFloat_AsDouble(PyTuple_GET_ITEM(line, 0));
        *factor = PyFloat_AsDouble(PyTuple_GET_ITEM(line, 1));
        rc = PyErr_Occurred() ? -1 : 0;
    }
    Py_DECREF(line);
    return rc;
}

/* the value under the key of dict nearest key (measured_costs._nearest: the smaller of two as near), borrowed */
static PyObject *nearest_value(PyObject *dict, long key, long *near) {
    PyObject *k, *v, *out = NULL;
    long best_d = -1, best_k = 0;
    Py_ssize_t pos = 0;
    while (PyDict_Next(dict, &pos, &k, &v)) {
        const long x = PyLong_AsLong(k);
        if (x == -1 && PyErr_Occurred()) return NULL;
        const long d = x > key ? x - key : key - x;
        if (best_d < 0 || d < best_d || (d == best_d && x < best_k)) best_d = d, best_k = x, out = v;
    }
    if (!out) PyErr_SetString(PyExc_ValueError, "no key to be nearest");
    if (near) *near = best_k;
    return out;
}

/* MeasuredCosts.batch_line(rows) for rows > 1 */
static int batch_line(PyObject *fits, long rows, double *fixed, double *factor) {
    const long key = bit_length(rows), keys[3] = {key, key + 1, key - 1};
    for (int i = 0; i < 3; i++) { /* (fits.get(key) or fits.get(key + 1) or fits.get(key - 1)) */
        PyObject *k = PyLong_FromLong(keys[i]);
        if (!k) return -1;
        PyObject *fit = PyDict_GetItemWithError(fits, k);
        Py_DECREF(k);
        if (fit) return line_of(fit, fixed, factor);
        if (PyErr_Occurred()) return -1;
    }
    *fixed = 0.0;
    *factor = 1.0;
    if (!PyDict_GET_SIZE(fits)) return 0;
    PyObject *fit = nearest_value(fits, key, NULL);
    double ignored;
    return fit ? line_of(fit, &ignored, factor) : -1;
}

/* time.perf_counter() (CPython's monotonic clock on Linux: CLOCK_MONOTONIC) */
static double perf_counter(void) {
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (double)now.tv_sec + 1e-9 * (double)now.tv_nsec;
}

/* what BatchedChoice.choose_batch does with a chosen draft (choose_fused's answer `got`, started at t0): the time per
   position read measured (_observe_read) where `read_at_least` positions or more were read, _skipped_s at 0, the
   promise kept. 0, or -1 an error */
static int chosen(PyObject *policy, PyObject *got, long B, double t0, long read_at_least) {
    const long read = PyLong_AsLong(PyTuple_GET_ITEM(got, 4));
    if (read == -1 && PyErr_Occurred()) return -1;
    PyObject *x = NULL, *promise = NULL;
    int rc = -1;
    if (read >= read_at_least) { /* (the policy's method: a test pins what it measures) */
        PyObject *none = NULL;
        if ((x = PyFloat_FromDouble((perf_counter() - t0) / (double)read)))
            none = PyObject_CallMethodOneArg(policy, s_observe_read, x);
        if (!none) goto done;
        Py_DECREF(none);
        Py_CLEAR(x);
    }
    if (!(x = PyFloat_FromDouble(0.0)) || set_attr(policy, s_skipped_s, x) < 0) goto done;
    if (!(promise = Py_BuildValue("(lOdO)", B, PyTuple_GET_ITEM(got, 2), perf_counter() - t0,
                                  PyTuple_GET_ITEM(got, 3))) ||
        set_attr(policy, s_promised, promise) < 0)
        goto done;
    rc = 0;
done:
    Py_XDECREF(x);
    Py_XDECREF(promise);
    return rc;
}

/* choose_priced(policy, states, cost, B): BatchedChoice.choose_batch's priced choice on a fused pass, its terms
   made here: each row's limit (its max_draft, at most the horizon), the greedy pass it is priced against (this
   batch's, else the run's, of about B rows), the drafted pass's line and scale, the bar, the floor and a first bet's
   tokens, then choose_fused. Returns (positions taken, draft lengths, tokens per second promised, tokens expected,
   positions read, limits, (fixed part, factor, greedy step, bar, floor, first bet)); (-2,) where no greedy pass of
   about B rows was measured;
   (-1, length) where the fused tables (policy._extras[B]) are missing or shorter than the choice reads (the caller
   makes them and asks again).
   choose_priced(policy, states, cost, B, t0, read_at_least): the same, and where a draft is chosen what
   BatchedChoice.choose_batch then does is done here too -- a choice that read `read_at_least` positions or more
   measures its time per position read (_observe_read), the promise is kept for the pass's
   judgement (_promised: rows, tokens per second, the choice's seconds since t0, a time.perf_counter() reading, tokens
   expected), _skipped_s starts again -- and only the draft lengths are returned (a list): in Python, after the C call,
   it took 3-6 us of a choice between two passes at B = 2 on the C backend. */
static PyObject *priced_choice(PyObject *policy, PyObject *states, PyObject *cost, long B, int keep, double t0,
                               long read_at_least) {
    if (!PyList_Check(states) || PyList_GET_SIZE(states) != B) {
        PyErr_SetString(PyExc_ValueError, "states must be a list of B states");
        return NULL;
    }
    PyObject *result = NULL, *limits = NULL, *most_o = NULL, *rows_o = NULL, *got = NULL;
    PyObject *batch_greedy = NULL, *greedy = NULL, *fits = NULL, *realized = NULL, *extras = NULL, *q = NULL,
             *q_first = NULL, *drafter_s = NULL, *start_s = NULL;
    int *limit_c = PyMem_Calloc((size_t)(B > 0 ? B : 1), sizeof(int));
    if (!limit_c) return PyErr_NoMemory();
    long horizon, c_batch, probe_rows, probe_len;
    double c_step, measured, fixed, factor, step, margin, weight, read_s, pad_s, bet_per_row, marginal = 0.0;
    int real_only;
    if (int_attr(policy, s_horizon, &horizon) < 0 || int_attr(cost, s_batch, &c_batch) < 0 ||
        double_attr(cost, s_step_s, &c_step) < 0 || !(batch_greedy = attr_of(policy, s_batch_greedy)) ||
        !(greedy = attr_of(policy, s_greedy)) || !PyDict_Check(batch_greedy) || !PyDict_Check(greedy)) {
        if (!PyErr_Occurred()) PyErr_SetString(PyExc_TypeError, "greedy passes must be dicts");
        goto done;
    }
    if (!(limits = PyList_New(B))) goto done;
    for (long r = 0; r < B; r++) {
        long lim;
        if (int_attr(PyList_GET_ITEM(states, r), s_max_draft, &lim) < 0) goto done;
        limit_c[r] = (int)(lim < horizon ? lim : horizon);
        PyObject *x = PyLong_FromLong(limit_c[r]);
        if (!x) goto done;
        PyList_SET_ITEM(limits, r, x);
    }
    int found = greedy_near(batch_greedy, greedy, B, c_batch, c_step, &measured);
    if (found < 0) goto done;
    if (!found) {
        result = Py_BuildValue("(i)", -2);
        goto done;
    }
    /* the drafted pass's line at about B rows, its factor scaled by how much dearer a real greedy pass is than the
       calibration's (MeasuredCosts._scale; B > 1: batch_line's fits) */
    if (B > 1) {
        if (!(fits = attr_of(policy, s_batch_fits)) || !PyDict_Check(fits)) {
            if (!PyErr_Occurred()) PyErr_SetString(PyExc_TypeError, "the batch fits must be a dict");
            goto done;
        }
        if (batch_line(fits, B, &fixed, &factor) < 0) goto done;
    } else if (double_attr(policy, s_extra_fixed, &fixed) < 0 || double_attr(policy, s_extra_factor, &factor) < 0) {
        goto done;
    }
    if ((real_only = truth_attr(policy, s_real_tokens_only)) < 0) goto done;
    factor = factor * (B > 1 && real_only ? scale_of(measured, B, c_batch, c_step) : 1.0);
    if (greedy_pass(greedy, B, c_batch, c_step, &step) < 0) goto done;
    /* BatchedChoice._bar: margin times a greedy pass's tokens per second, over what drafted passes of about B rows
       realised of their promise */
    if (double_attr(policy, s_margin, &margin) < 0 || !(realized = attr_of(policy, s_realized)) ||
        !PyDict_Check(realized)) {
        if (!PyErr_Occurred()) PyErr_SetString(PyExc_TypeError, "the realised shares must be a dict");
        goto done;
    }
    double share = 1.0;
    found = get_double(realized, bit_length(B), &share);
    if (found < 0) goto done;
    if (!found || share == 0.0) { /* (dict.get(key) or the nearest's) */
        share = 1.0;
        if (PyDict_GET_SIZE(realized)) {
            PyObject *v = nearest_value(realized, bit_length(B), NULL);
            if (!v || ((share = PyFloat_AsDouble(v)) == -1.0 && PyErr_Occurred())) goto done;
        }
    }
    const double bar = margin * (double)B / (step * (1.0 < share ? 1.0 : share));
    if (double_attr(policy, s_weight, &weight) < 0 || double_attr(policy, s_read_s, &read_s) < 0 ||
        double_attr(cost, s_pad_s, &pad_s) < 0 || double_attr(policy, s_bet_per_row, &bet_per_row) < 0 ||
        int_attr(policy, s_probe_rows, &probe_rows) < 0 || int_attr(policy, s_probe_len, &probe_len) < 0)
        goto done;
    const long bet = (long)(bet_per_row * (double)B);  /* BatchedChoice._first_bet */
    const long most = probe_rows * probe_len > bet ? probe_rows * probe_len : bet;
    /* the fused tables and the least slope above B rows (MeasuredCosts._min_marginal), kept by native_choice._tables
       under the int B with the cost they were made for (a key of ints and the cost's id, built and hashed here, and
       the least slope made from the cost's curve again took a fifth of this call between two passes) */
    if (!(extras = attr_of(policy, s_extras)) || !PyDict_Check(extras) ||
        !(rows_o = PyLong_FromLong(B))) {
        if (!PyErr_Occurred()) PyErr_SetString(PyExc_TypeError, "the policy's tables must be a dict");
        goto done;
    }
    PyObject *tables = PyDict_GetItemWithError(extras, rows_o);
    if (!tables && PyErr_Occurred()) goto done;
    if (!tables || !PyTuple_Check(tables) || PyTuple_GET_SIZE(tables) != 5 || PyTuple_GET_ITEM(tables, 0) != cost ||
        PyObject_Length(PyTuple_GET_ITEM(tables, 3)) != PyObject_Length(PyTuple_GET_ITEM(tables, 1))) {
        if (!PyErr_Occurred()) result = Py_BuildValue("(ii)", -1, 16);
        goto done;
    }
    if ((marginal = PyFloat_AsDouble(PyTuple_GET_ITEM(tables, 4))) == -1.0 && PyErr_Occurred()) goto done;
    if (!(q = attr_of(policy, s_q)) || !(q_first = attr_of(policy, s_q_first)) ||
        !(drafter_s = attr_of(policy, s_drafter_s)) || !(start_s = attr_of(policy, s_start_s)))
        goto done;
    const double par[9] = {weight, factor * marginal * bar, step, fixed, factor, read_s, pad_s, 0.25 * step, bar};
    if (!(got = choose_rows(B, limit_c, states, q, q_first, PyTuple_GET_ITEM(tables, 1), PyTuple_GET_ITEM(tables, 2),
                            PyTuple_GET_ITEM(tables, 3), drafter_s, start_s, par, most)))
        goto done;
    if (PyTuple_GET_SIZE(got) != 5) { /* (-1, the tables' length needed) */
        result = got;
        got = NULL;
        goto done;
    }
    if (keep && PyLong_AsLong(PyTuple_GET_ITEM(got, 0)) > 0) {
        if (chosen(policy, got, B, t0, read_at_least) < 0) goto done;
        result = Py_NewRef(PyTuple_GET_ITEM(got, 1));
        goto done;
    }
    result = Py_BuildValue("(OOOOOO(dddddO))", PyTuple_GET_ITEM(got, 0), PyTuple_GET_ITEM(got, 1),
                           PyTuple_GET_ITEM(got, 2), PyTuple_GET_ITEM(got, 3), PyTuple_GET_ITEM(got, 4), limits, fixed,
                           factor, step, bar, factor * marginal * bar, most_o = PyLong_FromLong(most));
done:
    PyMem_Free(limit_c);
    Py_XDECREF(limits);
    Py_XDECREF(most_o);
    Py_XDECREF(rows_o);
    Py_XDECREF(got);
    Py_XDECREF(batch_greedy);
    Py_XDECREF(greedy);
    Py_XDECREF(fits);
    Py_XDECREF(realized);
    Py_XDECREF(extras);
    Py_XDECREF(q);
    Py_XDECREF(q_first);
    Py_XDECREF(drafter_s);
    Py_XDECREF(start_s);
    return result;
}

static PyObject *choose_priced(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 4 && nargs != 6) {
        PyErr_SetString(PyExc_TypeError, "choose_priced(policy, states, cost, B[, t0, read_at_least])");
        return NULL;
    }
    const long B = PyLong_AsLong(args[3]);
    double t0 = 0.0;
    long read_at_least = 0;
    if ((B == -1 && PyErr_Occurred()) ||
        (nargs == 6 && (((t0 = PyFloat_AsDouble(args[4])) == -1.0 && PyErr_Occurred()) ||
                        ((read_at_least = PyLong_AsLong(args[5])) == -1 && PyErr_Occurred()))))
        return NULL;
    return priced_choice(args[0], args[1], args[2], B, nargs == 6, t0, read_at_least);
}

/* new_batch(policy, fade): BatchedChoice.new_batch -- batch-1 iterations still waiting counted (_flush_iterations, a
   Python call), what drafted passes realised moved 1 - `fade` of the way back to their promise (_relax_judged: each row class's judged
   sums (tokens got, tokens expected, seconds spent, seconds promised) relaxed towards their promise, their realised
   share made again), this batch's greedy passes and pending drafted passes emptied, a hold ended (_end_batch_hold), a
   "no draft" held for rows with counts of their own dropped. As Python methods at every batch's start, 6-9 us at
   B = 2 on the C backend. */
static PyObject *new_batch(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 2) {
        PyErr_SetString(PyExc_TypeError, "new_batch(policy, fade)");
        return NULL;
    }
    PyObject *policy = args[0], *x = NULL, *judged = NULL, *realized = NULL, *skips = NULL, *kept = NULL, *key, *val;
    const double f = PyFloat_AsDouble(args[1]);
    long hold_len, hold;
    int on;
    if (f == -1.0 && PyErr_Occurred()) return NULL;
    if (!(x = attr_of(policy, s_waiting_iterations)) || (on = PyObject_IsTrue(x)) < 0) goto fail;
    Py_CLEAR(x);
    if (on && !(x = PyObject_CallMethodNoArgs(policy, s_flush_iterations))) goto fail;
    Py_CLEAR(x);
    if (!(judged = attr_of(policy, s_judged)) || !(realized = attr_of(policy, s_realized))) goto fail;
    if (!PyDict_Check(judged) || !PyDict_Check(realized)) {
        PyErr_SetString(PyExc_TypeError, "the judged sums must be dicts");
        goto fail;
    }
    Py_ssize_t pos = 0;
    while (PyDict_Next(judged, &pos, &key, &val)) { /* (values replaced, keys kept: safe while iterating) */
        double v[4];
        if (!PyTuple_Check(val) || PyTuple_GET_SIZE(val) != 4) {
            PyErr_SetString(PyExc_TypeError, "judged sums must be 4-tuples");
            goto fail;
        }
        for (int i = 0; i < 4; i++)
            if ((v[i] = PyFloat_AsDouble(PyTuple_GET_ITEM(val, i))) == -1.0 && PyErr_Occurred()) goto fail;
        const double got = v[1] - f * (v[1] - v[0]), seconds = v[3] + f * (v[2] - v[3]);
        Py_INCREF(key); /* (the dict's own reference may go with the value it replaces: kept until done) */
        int rc = (x = Py_BuildValue("(dddd)", got, v[1], seconds, v[3])) ? PyDict_SetItem(judged, key, x) : -1;
        Py_CLEAR(x);
        if (!rc) rc = (x = PyFloat_FromDouble((got / v[1]) * (v[3] / seconds))) ? PyDict_SetItem(realized, key, x) : -1;
        Py_CLEAR(x);
        Py_DECREF(key);
        if (rc < 0) goto fail;
    }
    if (!(x = PyDict_New()) || set_attr(policy, s_batch_greedy, x) < 0) goto fail;
    Py_CLEAR(x);
    if (!(x = PyDict_New()) || set_attr(policy, s_pending, x) < 0) goto fail;
    Py_CLEAR(x);
    if (int_attr(policy, s_batch_hold_len, &hold_len) < 0 || int_attr(policy, s_batch_hold, &hold) < 0) goto fail;
    if ((hold_len || hold) && !(x = PyObject_CallMethodNoArgs(policy, s_end_batch_hold))) goto fail;
    Py_CLEAR(x);
    if (!(skips = attr_of(policy, s_batch_skips))) goto fail;
    if (!PyDict_Check(skips)) {
        PyErr_SetString(PyExc_TypeError, "the held choices must be a dict");
        goto fail;
    }
    if (PyDict_GET_SIZE(skips)) { /* (each held (made for (version, rows, own counts), uses, step, probe cost)) */
        if (!(kept = PyDict_New())) goto fail;
        pos = 0;
        while (PyDict_Next(skips, &pos, &key, &val)) {
            PyObject *made = PyTuple_Check(val) && PyTuple_GET_SIZE(val) ? PyTuple_GET_ITEM(val, 0) : NULL;
            if (!made || !PyTuple_Check(made) || PyTuple_GET_SIZE(made) < 3) {
                PyErr_SetString(PyExc_TypeError, "a held choice must be ((version, rows, own), uses, step, cost)");
                goto fail;
            }
            if ((on = PyObject_IsTrue(PyTuple_GET_ITEM(made, 2))) < 0 || (!on && PyDict_SetItem(kept, key, val) < 0))
                goto fail;
        }
        if (set_attr(policy, s_batch_skips, kept) < 0) goto fail;
    }
    Py_DECREF(judged);
    Py_DECREF(realized);
    Py_DECREF(skips);
    Py_XDECREF(kept);
    Py_RETURN_NONE;
fail:
    Py_XDECREF(x);
    Py_XDECREF(judged);
    Py_XDECREF(realized);
    Py_XDECREF(skips);
    Py_XDECREF(kept);
    return NULL;
}

/* take_held_step(policy, rows): BatchedChoice.take_held_step -- whether the batched loop's next pass, over `rows` rows,
   is a greedy one the held "no draft" covers (counted here), else False (a hold that ran out or lost half its rows ended
   by the method _end_batch_hold). As a Python method, called before every choice, it took 1.5-2 us between two
   passes at B = 2 on the C backend. */
static PyObject *take_held_step(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    long hold, hold_rows, hold_len;
    if (nargs != 2) {
        PyErr_SetString(PyExc_TypeError, "take_held_step(policy, rows)");
        return NULL;
    }
    PyObject *policy = args[0];
    const long rows = PyLong_AsLong(args[1]);
    if ((rows == -1 && PyErr_Occurred()) || int_attr(policy, s_batch_hold, &hold) < 0) return NULL;
    if (hold) {
        if (int_attr(policy, s_batch_hold_rows, &hold_rows) < 0) return NULL;
        /* (Python's floor division, for a row count that is not negative) */
        const long half = hold_rows >= 0 ? hold_rows / 2 : -((-hold_rows + 1) / 2);
        if (rows > half) {
            if (set_long(policy, s_batch_hold, hold - 1) < 0) return NULL;
            Py_RETURN_TRUE;
        }
    }
    if (int_attr(policy, s_batch_hold_len, &hold_len) < 0) return NULL;
    if (hold_len) {
        PyObject *none = PyObject_CallMethodNoArgs(policy, s_end_batch_hold);
        if (!none) return NULL;
        Py_DECREF(none);
    }
    Py_RETURN_FALSE;
}

/* whether choose_batch's common case holds for B rows (1: *cost, a new reference, the batch's cost), as the method
   checks it: a fused pass, no hold on, no "no draft" held, no padded choice standing, counts seen, the cost found
   already. 0 not, -1 an error */
static int common_choice(PyObject *policy, long B, PyObject **cost) {
    PyObject *skips = NULL, *standing = NULL, *reach = NULL, *cost_for = NULL, *key = NULL;
    long held;
    double seen;
    int rc = -1, on;
    *cost = NULL;
    if ((on = truth_attr(policy, s_rows_fused)) < 0 || int_attr(policy, s_batch_hold_len, &held) < 0) return -1;
    if (!on || held) return 0;
    if (!(skips = attr_of(policy, s_batch_skips))) goto done;
    if ((on = PyObject_IsTrue(skips)) != 0) {
        rc = on < 0 ? -1 : 0;
        goto done;
    }
    if (!(standing = attr_of(policy, s_standing)) || !(reach = attr_of(policy, s_reach))) goto done;
    if (standing != Py_None) {
        rc = 0;
        goto done;
    }
    if (!PyList_Check(reach)) {
        PyErr_SetString(PyExc_TypeError, "the counts by position must be a list");
        goto done;
    }
    if (number_at(reach, 1, &seen) < 0) goto done;
    if (seen == 0.0) { /* (the run's first draft is a probe of one row) */
        rc = 0;
        goto done;
    }
    if (!(cost_for = attr_of(policy, s_cost_for)) || !(key = PyLong_FromLong(B))) goto done;
    if (!PyDict_Check(cost_for)) {
        PyErr_SetString(PyExc_TypeError, "the costs by rows must be a dict");
        goto done;
    }
    if ((*cost = PyDict_GetItemWithError(cost_for, key))) {
        Py_INCREF(*cost);
        rc = 1;
    } else {
        rc = PyErr_Occurred() ? -1 : 0;
    }
done:
    Py_XDECREF(skips);
    Py_XDECREF(standing);
    Py_XDECREF(reach);
    Py_XDECREF(cost_for);
    Py_XDECREF(key);
    return rc;
}

/* choose_batch(policy, read_at_least, states, verifier): BatchedChoice.choose_batch where its common case is decided
   here -- the batch's cost already found for B rows (_cost_for), no held "no draft" or hold on, no padded choice
   standing, counts seen, a fused pass -- as choose_priced(policy, states, cost, B, t0, read_at_least) after the
   method's resets (the promise, the iteration's time and tokens) and the cost kept as the last one; a choice that
   chose no draft, or could not choose yet, goes on in the method's _priced_in_c, and any other case in the method
   itself. (A Python method between two passes, its frame and first lines read cold, cost 4-6 us of a choice at B = 2
   on the C backend.) */
static PyObject *choose_batch(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 4) {
        PyErr_SetString(PyExc_TypeError, "choose_batch(policy, read_at_least, states, verifier)");
        return NULL;
    }
    PyObject *policy = args[0], *states = args[2], *verifier = args[3], *x = NULL, *cost = NULL, *got = NULL;
    const long read_at_least = PyLong_AsLong(args[1]);
    if (read_at_least == -1 && PyErr_Occurred()) return NULL;
    const int common = PyList_Check(states) ? common_choice(policy, (long)PyList_GET_SIZE(states), &cost) : 0;
    const long B = common > 0 ? (long)PyList_GET_SIZE(states) : 0;
    if (common < 0) return NULL;
    if (!common) return PyObject_CallMethodObjArgs(policy, s_choose_batch, states, verifier, NULL);
    PyObject *result = NULL, *t0_o = NULL, *key = NULL;
    if (set_attr(policy, s_promised, Py_None) < 0 || !(x = PyFloat_FromDouble(0.0)) ||
        set_attr(policy, s_iter_s, x) < 0 || set_long(policy, s_iter_accepted, 0) < 0 ||
        set_attr(policy, s_last, cost) < 0)
        goto done;
    Py_CLEAR(x);
    const double t0 = perf_counter();
    if (!(got = priced_choice(policy, states, cost, B, 1, t0, read_at_least))) goto done;
    if (PyList_Check(got)) {
        result = got;
        got = NULL;
        goto done;
    }
    if ((t0_o = PyFloat_FromDouble(t0)) && (key = PyLong_FromLong(bit_length(B))) && (x = PyLong_FromLong(B)))
        result = PyObject_CallMethodObjArgs(policy, s_priced_in_c, states, cost, x, got, t0_o, key, NULL);
done:
    Py_XDECREF(x);
    Py_XDECREF(cost);
    Py_XDECREF(got);
    Py_XDECREF(t0_o);
    Py_XDECREF(key);
    return result;
}

/* fit_add(fit, predicted, seen): measured_costs._ExtraFit.add on a fit's slots (decay, sums, line): the batch-1 loop
   counts a drafted pass with it (its arithmetic took 2-3 us a pass in Python). Returns the new line. */
static PyObject *fit_line_add(PyObject *fit, const double x, double seen) {
    PyObject *decay_o = NULL, *sums_o = NULL, *line_o = NULL, *sums = NULL, *line = NULL;
    double d, v[5], l[2];
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

static PyObject *fit_add(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 3) {
        PyErr_SetString(PyExc_TypeError, "fit_add(fit, predicted, seen)");
        return NULL;
    }
    const double x = PyFloat_AsDouble(args[1]), seen = PyFloat_AsDouble(args[2]);
    if (PyErr_Occurred()) return NULL;
    return fit_line_add(args[0], x, seen);
}

/* BatchedChoice._judge_batch_pass: a drafted pass of `rows` rows that took `seconds` with `sum` draft tokens against
   what its choice promised, where a choice of as many rows made one (its judged sums fade by `fade` a pass,
   _JUDGED_FADE; a pass that gave `kept` of its promise, _BET_KEPT, lets later bets grow); then the next iteration's
   clock and accepted tokens start from 0 and the promise is spent. 0, or -1 an error. */
static int judge_pass(PyObject *policy, long rows, double seconds, long sum, double fade, double kept) {
    PyObject *promised = NULL, *judged = NULL, *realized = NULL, *key = NULL, *item_o = NULL;
    int rc = -1;
    if (!(promised = attr_of(policy, s_promised))) goto done;
    if (promised != Py_None) {
        if (!PyTuple_Check(promised) || PyTuple_GET_SIZE(promised) != 4) {
            PyErr_SetString(PyExc_TypeError, "a promise must be a (rows, rate, seconds, tokens) tuple");
            goto done;
        }
        const long p_rows = PyLong_AsLong(PyTuple_GET_ITEM(promised, 0));
        if (p_rows == -1 && PyErr_Occurred()) goto done;
        if (p_rows == rows) {
            long accepted;
            double iter_s, p[3], sums[4], bet;
            if (int_attr(policy, s_iter_accepted, &accepted) < 0 || double_attr(policy, s_iter_s, &iter_s) < 0)
                goto done;
            for (int i = 0; i < 3; i++)
                if ((p[i] = PyFloat_AsDouble(PyTuple_GET_ITEM(promised, i + 1))) == -1.0 && PyErr_Occurred()) goto done;
            const long got = rows + accepted;
            const double spent = seconds + iter_s + p[1], ratio = (double)got / spent / p[0];
            const double expected = p[2], promised_s = p[2] / p[0];
            /* BatchedChoice._judge: sums that fade by `fade` a pass, from one pass that kept its promise */
            if (!(judged = attr_of(policy, s_judged)) || !(realized = attr_of(policy, s_realized)) ||
                !PyDict_Check(judged) || !PyDict_Check(realized)) {
                if (!PyErr_Occurred()) PyErr_SetString(PyExc_TypeError, "the judged sums must be dicts");
                goto done;
            }
            if (!(key = PyLong_FromLong(bit_length(rows)))) goto done;
            PyObject *had = PyDict_GetItemWithError(judged, key);
            if (!had && PyErr_Occurred()) goto done;
            if (had) {
                if (!PyTuple_Check(had) || PyTuple_GET_SIZE(had) != 4) {
                    PyErr_SetString(PyExc_TypeError, "judged sums must be 4-tuples");
                    goto done;
                }
                for (int i = 0; i < 4; i++)
                    if ((sums[i] = PyFloat_AsDouble(PyTuple_GET_ITEM(had, i))) == -1.0 && PyErr_Occurred()) goto done;
            } else {
                sums[0] = sums[1] = expected;
                sums[2] = sums[3] = promised_s;
            }
            const double n0 = fade * sums[0] + (double)got, n1 = fade * sums[1] + expected,
                         n2 = fade * sums[2] + spent, n3 = fade * sums[3] + promised_s;
            if (!(item_o = Py_BuildValue("(dddd)", n0, n1, n2, n3)) || PyDict_SetItem(judged, key, item_o) < 0)
                goto done;
            Py_CLEAR(item_o);
            if (!(item_o = PyFloat_FromDouble((n0 / n1) * (n3 / n2))) || PyDict_SetItem(realized, key, item_o) < 0)
                goto done;
            Py_CLEAR(item_o);
            if (ratio >= kept) {
                const double more = (double)(2 * sum) / (double)rows;
                if (double_attr(policy, s_bet_per_row, &bet) < 0) goto done;
                if (more > bet) {
                    if (!(item_o = PyFloat_FromDouble(more)) || set_attr(policy, s_bet_per_row, item_o) < 0)
                        goto done;
                    Py_CLEAR(item_o);
                }
            }
        }
    }
    if (!(item_o = PyFloat_FromDouble(0.0)) || set_attr(policy, s_iter_s, item_o) < 0) goto done;
    Py_CLEAR(item_o);
    if (!(item_o = PyLong_FromLong(0)) || set_attr(policy, s_iter_accepted, item_o) < 0 ||
        set_attr(policy, s_promised, Py_None) < 0)
        goto done;
    rc = 0;
done:
    Py_XDECREF(promised);
    Py_XDECREF(judged);
    Py_XDECREF(realized);
    Py_XDECREF(key);
    Py_XDECREF(item_o);
    return rc;
}

/* MeasuredCosts.observe_pass for a drafted pass of two rows or more on a fused pass (a CPU's), its common way: the
   pass judged against what its choice promised (judge_pass), and what its drafts added beyond the calibration's
   prediction, against this batch's greedy pass of its rows, handed to the batch's fit (_fit_batch, a Python call: one
   pass in a few) or kept for the batch's first greedy pass (_pending). `sum` draft tokens, the widest `most`, `pp` the
   rows the pass projected as counted (-1: not counted). 1 observed, 0 nothing changed where the Python method observes
   the pass (a padded pass, the tables of its rows not made for the policy's cost or too short), -1 an error. */
static int observe_fused_pass(PyObject *policy, double seconds, long rows, long sum, long most, long pp, double fade,
                              double kept) {
    PyObject *cost = NULL, *fed_list = NULL, *extras = NULL, *key = NULL, *batch_greedy = NULL, *greedy = NULL,
             *item_o = NULL;
    Doubles fed = {0}, rows_tab = {0};
    long c_batch = 0, proj = sum;
    double c_step = 0.0, pad_s = 0.0;
    const long t = sum, fed_n = rows + sum;
    int judged_only = 0, rc = -1;
    const int fused_on = truth_attr(policy, s_rows_fused);
    if (fused_on <= 0) return fused_on;
    /* what is read before anything changes: the cost, the tables */
    if (!(cost = attr_of(policy, s_last))) goto done;
    if (pp >= 0 && pp < proj) proj = pp;
    judged_only = cost == Py_None;
    if (!judged_only) {
        double last;
        if (int_attr(cost, s_batch, &c_batch) < 0 || double_attr(cost, s_step_s, &c_step) < 0 ||
            double_attr(cost, s_pad_s, &pad_s) < 0 || !(fed_list = attr_of(cost, s_fed)))
            goto done;
        if (!PyList_Check(fed_list) || !PyList_GET_SIZE(fed_list)) {
            PyErr_SetString(PyExc_TypeError, "a cost's fed tokens must be a non-empty list");
            goto done;
        }
        if (number_at(fed_list, PyList_GET_SIZE(fed_list) - 1, &last) < 0) goto done;
        /* (past the measured passes the prediction is a straight line out: not fitted) */
        judged_only = (double)(fed_n + (c_batch - rows > 0 ? c_batch - rows : 0)) > 1.5 * last;
    }
    if (!judged_only) {
        if (!(extras = attr_of(policy, s_extras)) || !(key = PyLong_FromLong(rows))) goto done;
        PyObject *entry = PyDict_Check(extras) ? PyDict_GetItemWithError(extras, key) : NULL;
        if (!entry && PyErr_Occurred()) goto done;
        if (!entry || !PyTuple_Check(entry) || PyTuple_GET_SIZE(entry) != 5 || PyTuple_GET_ITEM(entry, 0) != cost) {
            rc = 0;
            goto done;
        }
        if (doubles_open(PyTuple_GET_ITEM(entry, 1), &fed) < 0 ||
            doubles_open(PyTuple_GET_ITEM(entry, 2), &rows_tab) < 0)
            goto done;
        if (fed.n <= t || rows_tab.n <= t) { /* (the Python method extends them) */
            rc = 0;
            goto done;
        }
    }
    if (set_attr(policy, s_pass_projected, Py_None) < 0 || judge_pass(policy, rows, seconds, sum, fade, kept) < 0)
        goto done;
    if (judged_only) {
        rc = 1;
        goto done;
    }
    /* what the drafts added: this pass less the batch's greedy pass of its rows (a pass waits for one) */
    double base = 0.0, measured = 0.0, scale = 1.0;
    if (!(batch_greedy = attr_of(policy, s_batch_greedy)) || !(greedy = attr_of(policy, s_greedy)) ||
        !PyDict_Check(batch_greedy) || !PyDict_Check(greedy)) {
        if (!PyErr_Occurred()) PyErr_SetString(PyExc_TypeError, "greedy passes must be dicts");
        goto done;
    }
    const int has_base = batch_greedy_near(batch_greedy, greedy, rows, c_batch, c_step, &base);
    if (has_base < 0) goto done;
    double extra_s = fed.p[t] + rows_tab.p[proj];
    if (pad_s != 0.0) extra_s += pad_s * (double)(rows * (1 + most) - fed_n);
    /* MeasuredCosts._scale: how much dearer a real greedy pass of these rows is than the calibration's (1 to 4) */
    const int real_only = truth_attr(policy, s_real_tokens_only);
    if (real_only < 0) goto done;
    if (real_only) {
        int has = has_base;
        measured = base;
        if (!has && (has = run_greedy_near(greedy, rows, &measured)) < 0) goto done;
        if (has) scale = scale_of(measured, rows, c_batch, c_step);
    }
    const double predicted = extra_s * scale;
    if (predicted <= 0) {
        rc = 1;
        goto done;
    }
    Py_CLEAR(key);
    if (!(key = PyLong_FromLong(rows))) goto done;
    if (!has_base) { /* (kept for the batch's first greedy pass of about as many rows: observe_greedy_pass) */
        PyObject *pending = attr_of(policy, s_pending), *fresh = PyList_New(0), *waiting;
        int added = -1;
        if (pending && fresh && PyDict_Check(pending) && (waiting = PyDict_SetDefault(pending, key, fresh)) &&
            (item_o = Py_BuildValue("(dd)", predicted, seconds)))
            added = PyList_Append(waiting, item_o);
        if (added < 0 && !PyErr_Occurred()) PyErr_SetString(PyExc_TypeError, "the pending passes must be a dict");
        Py_XDECREF(pending);
        Py_XDECREF(fresh);
        if (added < 0) goto done;
    } else { /* (MeasuredCosts._fit_batch: the fit of its row class, a Python call where it is not made yet) */
        PyObject *fits = attr_of(policy, s_batch_fits), *fit_key = NULL, *fit = NULL, *line = NULL;
        double seen = seconds - base;
        if (fits && PyDict_Check(fits) && (fit_key = PyLong_FromLong(bit_length(rows))))
            fit = PyDict_GetItemWithError(fits, fit_key);
        Py_XDECREF(fits);
        Py_XDECREF(fit_key);
        if (PyErr_Occurred()) goto done;
        if (fit) {
            if (0.0 > seen) seen = 0.0; /* (max(extra_s, 0.0)) */
            if (!(line = fit_line_add(fit, predicted, seen))) goto done;
            Py_DECREF(line);
        } else {
            PyObject *pred_o = PyFloat_FromDouble(predicted), *seen_o = PyFloat_FromDouble(seen), *none = NULL;
            if (pred_o && seen_o) none = PyObject_CallMethodObjArgs(policy, s_fit_batch, key, pred_o, seen_o, NULL);
            Py_XDECREF(pred_o);
            Py_XDECREF(seen_o);
            if (!none) goto done;
            Py_DECREF(none);
        }
    }
    rc = 1;
done:
    doubles_close(&fed);
    doubles_close(&rows_tab);
    Py_XDECREF(cost);
    Py_XDECREF(fed_list);
    Py_XDECREF(extras);
    Py_XDECREF(key);
    Py_XDECREF(batch_greedy);
    Py_XDECREF(greedy);
    Py_XDECREF(item_o);
    return rc;
}

/* a drafted batch's draft lengths (a list of ints): their sum, the widest, whether any drafted. 0, or -1 an error */
static int drafted_of(PyObject *drafted, long *sum, long *most, int *any) {
    if (!PyList_Check(drafted)) {
        PyErr_SetString(PyExc_TypeError, "drafted must be a list");
        return -1;
    }
    *sum = *most = 0;
    *any = 0;
    for (Py_ssize_t r = 0; r < PyList_GET_SIZE(drafted); r++) {
        const long k = PyLong_AsLong(PyList_GET_ITEM(drafted, r));
        if (k == -1 && PyErr_Occurred()) return -1;
        *sum += k;
        *any |= k != 0;
        if (r == 0 || k > *most) *most = k;
    }
    return 0;
}

/* observe_fused(policy, seconds, drafted, fade, kept): MeasuredCosts.observe_pass for a drafted pass of two rows or
   more on a fused pass (observe_fused_pass; in Python 13-24 us a pass between two passes of the C backend at B = 2 to
   8, by a wrapper's timings), the rows it projected read from the policy's _pass_projected. Returns True, or False
   with nothing changed where the Python method observes the pass (one row, no drafts, and as observe_fused_pass). */
static PyObject *observe_fused(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 5) {
        PyErr_SetString(PyExc_TypeError, "observe_fused(policy, seconds, drafted, fade, kept)");
        return NULL;
    }
    PyObject *policy = args[0];
    const double seconds = PyFloat_AsDouble(args[1]), fade = PyFloat_AsDouble(args[3]),
                 kept = PyFloat_AsDouble(args[4]);
    long sum, most, pp = -1;
    int any;
    if (PyErr_Occurred() || drafted_of(args[2], &sum, &most, &any) < 0) return NULL;
    const long rows = (long)PyList_GET_SIZE(args[2]);
    if (rows <= 1 || !any) Py_RETURN_FALSE;
    PyObject *pp_o = attr_of(policy, s_pass_projected);
    if (!pp_o) return NULL;
    if (pp_o != Py_None && (pp = PyLong_AsLong(pp_o)) == -1 && PyErr_Occurred()) {
        Py_DECREF(pp_o);
        return NULL;
    }
    Py_DECREF(pp_o);
    const int rc = observe_fused_pass(policy, seconds, rows, sum, most, pp, fade, kept);
    if (rc < 0) return NULL;
    return PyBool_FromLong(rc);
}

/* MeasuredCosts._mean: a table's seconds at `rows` rows, a new count at once, a known one refined */
static int mean_into(PyObject *table, long rows, double seconds) {
    double old;
    const int found = get_double(table, rows, &old);
    if (found < 0) return -1;
    PyObject *key = PyLong_FromLong(rows), *val = PyFloat_FromDouble(found ? 0.8 * old + 0.2 * seconds : seconds);
    const int rc = key && val ? PyDict_SetItem(table, key, val) : -1;
    Py_XDECREF(key);
    Py_XDECREF(val);
    return rc;
}

/* MeasuredCosts._observe_row_pass: a batch's last row's pass, `k` draft tokens (the pass judged where its choice
   promised; a greedy one refines the greedy step at one row; a drafted one, what the drafts added beyond the
   calibration's prediction, into the batch-1 fit). 0, or -1 an error. */
static int observe_row_pass(PyObject *policy, double seconds, long k, double fade, double kept) {
    PyObject *promised = attr_of(policy, s_promised), *greedy = NULL, *cost = NULL, *table = NULL,
             *fit = NULL, *line = NULL;
    int rc = -1;
    if (!promised) return -1;
    const int judge = promised != Py_None;
    Py_DECREF(promised);
    if (judge && judge_pass(policy, 1, seconds, k, fade, kept) < 0) return -1;
    if (!(greedy = attr_of(policy, s_greedy))) return -1;
    if (!PyDict_Check(greedy)) {
        PyErr_SetString(PyExc_TypeError, "greedy passes must be dicts");
        goto done;
    }
    if (!k) {
        rc = mean_into(greedy, 1, seconds);
        goto done;
    }
    if (!(cost = attr_of(policy, s_cost))) goto done;
    rc = 0;
    if (cost == Py_None) goto done;
    rc = -1;
    long horizon;
    double predicted, base;
    if (int_attr(policy, s_horizon, &horizon) < 0 || !(table = attr_of(policy, s_table))) goto done;
    if (!PyList_Check(table)) {
        PyErr_SetString(PyExc_TypeError, "the predicted passes must be a list");
        goto done;
    }
    if (number_at(table, k < horizon ? k : horizon, &predicted) < 0) goto done;
    rc = 0;
    if (!(predicted > 0)) goto done;
    rc = -1;
    const int found = get_double(greedy, 1, &base);
    if (found < 0 || (!found && double_attr(cost, s_step_s, &base) < 0)) goto done;
    const double seen = 0.0 > seconds - base ? 0.0 : seconds - base; /* (max(seconds - base, 0.0)) */
    if (!(fit = attr_of(policy, s_fit)) || !(line = fit_line_add(fit, predicted, seen))) goto done;
    if (!PyTuple_Check(line) || PyTuple_GET_SIZE(line) != 2) {
        PyErr_SetString(PyExc_TypeError, "a fit's line must be a pair");
        goto done;
    }
    if (set_attr(policy, s_extra_fixed, PyTuple_GET_ITEM(line, 0)) < 0 ||
        set_attr(policy, s_extra_factor, PyTuple_GET_ITEM(line, 1)) < 0)
        goto done;
    rc = 0;
done:
    Py_XDECREF(greedy);
    Py_XDECREF(cost);
    Py_XDECREF(table);
    Py_XDECREF(fit);
    Py_XDECREF(line);
    return rc;
}


/* MeasuredCosts._first_at_most on the policy's table `name` (its drafter's calls or starts by rows): the mean at
   `rows`, a first call there taken at most at twice what the nearest measured count scales to (_lookup); then the
   policy's version moves on. 0, or -1 an error */
static int first_at_most(PyObject *policy, PyObject *name, long rows, double seconds) {
    PyObject *table = attr_of(policy, name);
    int rc = -1;
    double old;
    long near, version;
    if (!table) return -1;
    if (!PyDict_Check(table)) {
        PyErr_SetString(PyExc_TypeError, "the drafter's costs must be a dict");
        goto done;
    }
    const int found = get_double(table, rows, &old);
    if (found < 0) goto done;
    if (!found && PyDict_GET_SIZE(table)) {
        double v;
        PyObject *v_o = nearest_value(table, rows, &near);
        if (!v_o || ((v = PyFloat_AsDouble(v_o)) == -1.0 && PyErr_Occurred())) goto done;
        const double ratio = (double)rows / (double)near, cap = 2.0 * (v * (1.0 > ratio ? 1.0 : ratio));
        if (cap < seconds) seconds = cap; /* (min(seconds, cap)) */
    }
    if (mean_into(table, rows, seconds) < 0 || int_attr(policy, s_version, &version) < 0) goto done;
    rc = set_long(policy, s_version, version + 1);
done:
    Py_DECREF(table);
    return rc;
}


/* AcceptanceCounts.observe_rows on the policy's own counts: count_core's loop over every row, the policy's tallies
   (accepted tokens, version, stale, deepest positions) read and written here, its rates refreshed (a Python call)
   where count_core stops for that. *projected: the positions past their first the pass projected. 0, or -1 */
static int count_policy_rows(PyObject *policy, PyObject *states, PyObject *asked, long *projected) {
    PyObject *lists_o[4] = {NULL, NULL, NULL, NULL}, *reach = NULL;
    PyObject *const names[4] = {s_ends, s_gots, s_ends_first, s_gots_first};
    long horizon, stale, version, iter_accepted, fold_top, deepest_all;
    int rc = -1;
    const Py_ssize_t n = PyList_GET_SIZE(states);
    *projected = 0;
    if (int_attr(policy, s_horizon, &horizon) < 0) return -1;
    Py_ssize_t r = 0;
    while (r < n) {
        double reach_1;
        for (int i = 0; i < 4; i++)
            if (!(lists_o[i] = attr_of(policy, names[i]))) goto done;
        if (lists(lists_o, 4) < 0 || int_attr(policy, s_stale, &stale) < 0 || !(reach = attr_of(policy, s_reach)))
            goto done;
        if (!PyList_Check(reach) || number_at(reach, 1, &reach_1) < 0) {
            if (!PyErr_Occurred()) PyErr_SetString(PyExc_TypeError, "the counts by position must be a list");
            goto done;
        }
        long accepted = 0, counted = 0, deepest = 0, proj = 0;
        if (count_core(states, asked, &r, horizon, lists_o[0], lists_o[1], lists_o[2], lists_o[3], &stale, reach_1,
                       &accepted, &counted, &deepest, &proj) < 0)
            goto done;
        *projected += proj;
        if (int_attr(policy, s_iter_accepted, &iter_accepted) < 0 || int_attr(policy, s_version, &version) < 0 ||
            set_long(policy, s_iter_accepted, iter_accepted + accepted) < 0 ||
            set_long(policy, s_version, version + counted) < 0 || set_long(policy, s_stale, stale) < 0 ||
            int_attr(policy, s_fold_top, &fold_top) < 0)
            goto done;
        if (deepest > fold_top) {
            if (set_long(policy, s_fold_top, deepest) < 0 || int_attr(policy, s_deepest, &deepest_all) < 0 ||
                (deepest > deepest_all && set_long(policy, s_deepest, deepest) < 0))
                goto done;
        }
        for (int i = 0; i < 4; i++) Py_CLEAR(lists_o[i]);
        Py_CLEAR(reach);
        if (counted && 4.0 * (double)stale >= reach_1) {
            PyObject *none = PyObject_CallMethodNoArgs(policy, s_refresh);
            if (!none) goto done;
            Py_DECREF(none);
        }
    }
    rc = 0;
done:
    for (int i = 0; i < 4; i++) Py_XDECREF(lists_o[i]);
    Py_XDECREF(reach);
    return rc;
}

/* the rows a pass projected past their first, as counted, kept for the pass's observation (_pass_projected) */
static int keep_projected(PyObject *policy, long projected) {
    PyObject *x = PyLong_FromLong(projected);
    const int rc = x ? set_attr(policy, s_pass_projected, x) : -1;
    Py_XDECREF(x);
    return rc;
}

/* count_batch(policy, states, asked): AcceptanceCounts.observe_rows (count_policy_rows), the rows the pass projected
   kept for its observation */
static PyObject *count_batch(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    long projected;
    if (nargs != 3) {
        PyErr_SetString(PyExc_TypeError, "count_batch(policy, states, asked)");
        return NULL;
    }
    if (lists(args + 1, 2) < 0) return NULL;
    if (PyList_GET_SIZE(args[2]) != PyList_GET_SIZE(args[1])) {
        PyErr_SetString(PyExc_ValueError, "asked must have one item a row");
        return NULL;
    }
    if (count_policy_rows(args[0], args[1], args[2], &projected) < 0 || keep_projected(args[0], projected) < 0)
        return NULL;
    Py_RETURN_NONE;
}

/* observe_batch(policy, fade, kept, states, asked, seconds, drafted, start_s, start_rows, drafter_s, drafter_rows):
   the drafter's start for `start_rows` new rows and its call for `drafter_rows` rows before the pass (observe_start,
   observe_drafter; None: none), the pass's rows counted (AcceptanceCounts.observe_rows) and the pass observed
   (MeasuredCosts.observe_pass; `seconds` None: not observed, a batch's first pass) in one call between two passes:
   as four calls, each reading the policy's state cold after the pass, they took 10-11 us (the counting), 6-10 (the
   pass) and 2-3 us each (the drafter's) at B = 2 on the C backend. The pass of a batch's last row and a drafted fused pass of
   two rows or more are observed here, any other pass by the policy's _observe_handed_back (no drafts, a padded pass,
   tables not made for the cost or too short). True where the pass was observed here (or not at all), else False. */
static PyObject *observe_batch(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 11) {
        PyErr_SetString(PyExc_TypeError, "observe_batch(policy, fade, kept, states, asked, seconds, drafted, start_s, "
                                         "start_rows, drafter_s, drafter_rows)");
        return NULL;
    }
    PyObject *policy = args[0], *states = args[3], *asked = args[4], *seconds_o = args[5], *drafted = args[6];
    const double fade = PyFloat_AsDouble(args[1]), kept = PyFloat_AsDouble(args[2]);
    if (PyErr_Occurred() || lists(args + 3, 2) < 0) return NULL;
    for (int i = 7; i < 11; i += 2) { /* (the drafter's start, then its call) */
        if (args[i] == Py_None) continue;
        const double spent = PyFloat_AsDouble(args[i]);
        const long rows = PyLong_AsLong(args[i + 1]);
        if (PyErr_Occurred() || first_at_most(policy, i == 7 ? s_start_s : s_drafter_s, rows, spent) < 0) return NULL;
        if (i == 9) { /* (a drafter call is part of the iteration's time, judged with its pass) */
            double iter_s;
            PyObject *x = NULL;
            if (double_attr(policy, s_iter_s, &iter_s) < 0 || !(x = PyFloat_FromDouble(iter_s + spent)) ||
                set_attr(policy, s_iter_s, x) < 0) {
                Py_XDECREF(x);
                return NULL;
            }
            Py_DECREF(x);
        }
    }
    if (PyList_GET_SIZE(asked) != PyList_GET_SIZE(states)) {
        PyErr_SetString(PyExc_ValueError, "asked must have one item a row");
        return NULL;
    }
    long projected, sum, most;
    int any;
    if (count_policy_rows(policy, states, asked, &projected) < 0) return NULL;
    if (seconds_o == Py_None) { /* (what observe_rows leaves for the pass's observation) */
        if (keep_projected(policy, projected) < 0) return NULL;
        Py_RETURN_TRUE;
    }
    const double seconds = PyFloat_AsDouble(seconds_o);
    if (PyErr_Occurred() || drafted_of(drafted, &sum, &most, &any) < 0) return NULL;
    const long rows = (long)PyList_GET_SIZE(drafted);
    int rc = 0;
    if (rows == 1) {
        if (set_attr(policy, s_pass_projected, Py_None) < 0) return NULL;
        rc = observe_row_pass(policy, seconds, sum, fade, kept) < 0 ? -1 : 1;
    } else if (any) {
        rc = observe_fused_pass(policy, seconds, rows, sum, most, projected, fade, kept);
    }
    if (rc < 0) return NULL;
    if (!rc) { /* (the Python method observes the pass) */
        PyObject *none = NULL;
        if (keep_projected(policy, projected) < 0 ||
            !(none = PyObject_CallMethodObjArgs(policy, s_observe_handed_back, seconds_o, drafted, NULL)))
            return NULL;
        Py_DECREF(none);
    }
    return PyBool_FromLong(rc);
}

static PyMethodDef methods[] = {
    {"count_sentence", (PyCFunction)(void (*)(void))count_sentence, METH_FASTCALL, "count a sentence's iteration"},
    {"best_length", (PyCFunction)(void (*)(void))best_length, METH_FASTCALL, "a sentence's next draft length"},
    {"choose_fused", (PyCFunction)(void (*)(void))choose_fused, METH_FASTCALL, "a batch's draft lengths"},
    {"fit_add", (PyCFunction)(void (*)(void))fit_add, METH_FASTCALL, "count a drafted pass in a fit"},
    {"count_batch", (PyCFunction)(void (*)(void))count_batch, METH_FASTCALL, "count a batched pass's rows"},
    {"choose_priced", (PyCFunction)(void (*)(void))choose_priced, METH_FASTCALL, "a batch's terms and choice"},
    {"fold", (PyCFunction)(void (*)(void))fold, METH_FASTCALL, "add observations to the counts by position"},
    {"rates", (PyCFunction)(void (*)(void))rates, METH_FASTCALL, "the rates by position from the counts"},
    {"observe_fused", (PyCFunction)(void (*)(void))observe_fused, METH_FASTCALL, "observe a drafted fused pass"},
    {"observe_batch", (PyCFunction)(void (*)(void))observe_batch, METH_FASTCALL, "count a batched pass, observe it"},
    {"choose_batch", (PyCFunction)(void (*)(void))choose_batch, METH_FASTCALL, "a batch's draft lengths"},
    {"take_held_step", (PyCFunction)(void (*)(void))take_held_step, METH_FASTCALL, "whether a held step is taken"},
    {"new_batch", (PyCFunction)(void (*)(void))new_batch, METH_FASTCALL, "a new batch starts"},
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
    struct {
        PyObject **name;
        const char *text;
    } names[] = {{&s_batch_greedy, "_batch_greedy"}, {&s_greedy, "_greedy"}, {&s_batch_fits, "_batch_fits"},
                 {&s_extra_fixed, "extra_fixed"}, {&s_extra_factor, "extra_factor"},
                 {&s_real_tokens_only, "_real_tokens_only"}, {&s_step_s, "step_s"}, {&s_batch, "batch"},
                 {&s_realized, "_realized"}, {&s_margin, "margin"}, {&s_extras, "_extras"}, {&s_weight, "weight"},
                 {&s_read_s, "_read_s"}, {&s_pad_s, "pad_s"}, {&s_bet_per_row, "_bet_per_row"},
                 {&s_probe_rows, "probe_rows"}, {&s_probe_len, "probe_len"}, {&s_q, "q"}, {&s_q_first, "q_first"},
                 {&s_drafter_s, "_drafter_s"}, {&s_start_s, "_start_s"}, {&s_max_draft, "max_draft"},
                 {&s_horizon, "horizon"}, {&s_line, "line"}, {&s_fed, "fed"},
                 {&s_rows_fused, "_rows_fused"}, {&s_last, "_last"}, {&s_pass_projected, "_pass_projected"},
                 {&s_promised, "_promised"}, {&s_iter_accepted, "_iter_accepted"}, {&s_iter_s, "_iter_s"},
                 {&s_judged, "_judged"}, {&s_pending, "_pending"}, {&s_fit_batch, "_fit_batch"},
                 {&s_cost, "cost"}, {&s_table, "_table"}, {&s_fit, "_fit"}, {&s_ends, "_ends"}, {&s_gots, "_gots"},
                 {&s_ends_first, "_ends_first"}, {&s_gots_first, "_gots_first"}, {&s_stale, "_stale"},
                 {&s_reach, "reach"}, {&s_version, "_version"}, {&s_fold_top, "_fold_top"},
                 {&s_deepest, "_deepest"}, {&s_refresh, "_refresh"}, {&s_skipped_s, "_skipped_s"},
                 {&s_observe_read, "_observe_read"}, {&s_batch_hold_len, "_batch_hold_len"},
                 {&s_batch_skips, "_batch_skips"}, {&s_standing, "_standing"}, {&s_cost_for, "_cost_for"},
                 {&s_choose_batch, "choose_batch"}, {&s_priced_in_c, "_priced_in_c"},
                 {&s_observe_handed_back, "_observe_handed_back"}, {&s_batch_hold, "batch_hold"},
                 {&s_batch_hold_rows, "_batch_hold_rows"}, {&s_end_batch_hold, "_end_batch_hold"},
                 {&s_waiting_iterations, "_waiting_iterations"}, {&s_flush_iterations, "_flush_iterations"}};
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
        if (!(*names[i].name = PyUnicode_InternFromString(names[i].text))) return NULL;
    return PyModule_Create(&module);
}
