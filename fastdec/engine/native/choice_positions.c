/* The choices over draft positions: batch 1's draft length (best_length), the batched choice on a fused pass
   (fused, choose_rows, choose_fused: positions taken best value first from a heap), and the counts folded into the
   rates by position they read (fold, rates).
   Part of choice.c (one translation unit: it includes this file after the parts above it). */

/* BatchOneChoice._best_length's loop over a sentence with counts of its own (reach, acc): the draft length
   1 .. limit with the most expected tokens per second above `best` (tokens per second), else 0, into *out.
   0, or -1 an error */
static int length_of(long limit, PyObject *reach, PyObject *acc, PyObject *q, PyObject *least, PyObject *table,
                     const double w, const double base, const double factor, double best, long *out) {
    double bar = factor * best, expected = 1.0, p = 1.0;
    long best_n = 0;
    for (long n = 1; n <= limit; n++) {
        double seen, qn, got, low, t;
        if (number_at(reach, n, &seen) < 0 || number_at(q, n, &qn) < 0) return -1;
        if (seen != 0.0) {
            if (number_at(acc, n, &got) < 0) return -1;
            p *= (got + w * qn) / (seen + w);
        } else {
            p *= qn;
        }
        if (p < 0.01) break;
        if (number_at(least, n - 1, &low) < 0) return -1;
        if (p < bar * low) break; /* no position from n on can pay for its place: the values only fall */
        expected += p;
        if (number_at(table, n, &t) < 0) return -1;
        const double rate = expected / (base + factor * t);
        if (rate > best) {
            best_n = n;
            best = rate;
            bar = factor * rate;
        }
    }
    *out = best_n;
    return 0;
}

/* best_length(limit, reach, acc, q, least, table, weight, base, factor, best): length_of */
static PyObject *best_length(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 10) {
        PyErr_SetString(PyExc_TypeError, "best_length(limit, reach, acc, q, least, table, weight, base, factor, best)");
        return NULL;
    }
    if (lists(args + 1, 5) < 0) return NULL;
    const long limit = PyLong_AsLong(args[0]);
    const double w = PyFloat_AsDouble(args[6]), base = PyFloat_AsDouble(args[7]), factor = PyFloat_AsDouble(args[8]);
    const double best = PyFloat_AsDouble(args[9]);
    long best_n;
    if (PyErr_Occurred() ||
        length_of(limit, args[1], args[2], args[3], args[4], args[5], w, base, factor, best, &best_n) < 0)
        return NULL;
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
