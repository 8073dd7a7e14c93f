/* Reading and writing the policy's Python objects from C (an attribute read from an object's own dict, numbers
   out of lists), and a batch's rows counted into their sentences' and the input's counts.
   Part of choice.c (one translation unit: it includes this file after the parts above it). */

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

/* obj.name(), its answer dropped: 0, or -1 an error */
static int call_method(PyObject *obj, PyObject *name) {
    PyObject *answer = PyObject_CallMethodNoArgs(obj, name);
    Py_XDECREF(answer);
    return answer ? 0 : -1;
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
    *s_prefix, *s_policy_idle, *s_policy_waits;

/* counts.py's LONGEST_WAIT (1 << 4): a wait's passes, wait_steps, are 1, 2, 4, 8, then 16 */
#define LONGEST_WAIT 16

/* an int kept in a state's extra dict (0 where it is not) */
static int extra_int(PyObject *extra, PyObject *key, long *out) {
    PyObject *x = PyDict_GetItemWithError(extra, key);
    *out = 0;
    if (!x) return PyErr_Occurred() ? -1 : 0;
    *out = PyLong_AsLong(x);
    return (*out == -1 && PyErr_Occurred()) ? -1 : 0;
}

static int set_extra_int(PyObject *extra, PyObject *key, long value) {
    PyObject *x = PyLong_FromLong(value);
    const int rc = x ? PyDict_SetItem(extra, key, x) : -1;
    Py_XDECREF(x);
    return rc;
}

/* list[m] *= 0.5, as Python multiplies an int or a float count */
static int halve_at(PyObject *list, Py_ssize_t m) {
    double v;
    if (number_at(list, m, &v) < 0) return -1;
    PyObject *x = PyFloat_FromDouble(v * 0.5);
    if (!x) return -1;
    return PyList_SetItem(list, m, x);
}

/* AcceptanceCounts._idle_row: a row asked for no draft whose sentence has counts of its own waits; after 1, 2, 4 ..
   LONGEST_WAIT such passes (doubling each time) its first position's counts halve (_forget_first). 0, or -1 an
   error. */
static int idle_row(PyObject *st) {
    PyObject *extra = attr_of(st, s_extra), *sent;
    int rc = -1;
    long idle, waits;
    if (!extra) return -1;
    if (!PyDict_Check(extra)) {
        PyErr_SetString(PyExc_TypeError, "a state's extra must be a dict");
        goto done;
    }
    if (!(sent = PyDict_GetItemWithError(extra, s_policy_counts)) || sent == Py_None) {
        rc = PyErr_Occurred() ? -1 : 0;
        goto done;
    }
    if (!PyTuple_Check(sent) || PyTuple_GET_SIZE(sent) != 2 || !PyList_Check(PyTuple_GET_ITEM(sent, 0)) ||
        !PyList_Check(PyTuple_GET_ITEM(sent, 1))) {
        PyErr_SetString(PyExc_ValueError, "a row's counts must be a (reach, acc) tuple of lists");
        goto done;
    }
    if (extra_int(extra, s_policy_idle, &idle) < 0 || extra_int(extra, s_policy_waits, &waits) < 0) goto done;
    const long wait = waits < 4 ? 1L << waits : LONGEST_WAIT;
    if (++idle < wait) {
        rc = set_extra_int(extra, s_policy_idle, idle);
        goto done;
    }
    Py_INCREF(sent); /* (the dict holds it; kept while the dict is written) */
    rc = set_extra_int(extra, s_policy_idle, 0) < 0 || set_extra_int(extra, s_policy_waits, waits + 1) < 0 ||
                 halve_at(PyTuple_GET_ITEM(sent, 0), 1) < 0 || halve_at(PyTuple_GET_ITEM(sent, 1), 1) < 0
             ? -1
             : 0;
    Py_DECREF(sent);
done:
    Py_DECREF(extra);
    return rc;
}

/* the exact rule's chunks on a CPU: 8, 16, 32 ... positions, a chunk starting at s holding s + 8 */
#define CHUNK 8

/* AcceptanceCounts._reached: the deepest position an iteration counts (the first rejected, or the draft's last, at
   most the horizon) and how many of them were accepted; an empty proposal where a draft was asked counts position 1
   rejected, and nothing where none was asked */
static void reached(long drafted, long accepted, long horizon, int asked, long *top, long *got) {
    if (drafted > 0) {
        *top = accepted + 1 < drafted ? accepted + 1 : drafted;
        if (horizon < *top) *top = horizon;
        *got = accepted < *top ? accepted : *top;
    } else {
        *top = asked ? 1 : 0;
        *got = 0;
    }
}

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
        if (!want) {
            if (idle_row(PyList_GET_ITEM(states, r)) < 0) return -1;
            continue;
        }
        PyObject *st = PyList_GET_ITEM(states, r);
        long drafted, accepted, top, got;
        if (int_attr(st, s_last_drafted, &drafted) < 0 || int_attr(st, s_last_accepted, &accepted) < 0) return -1;
        projected += projected_rows(drafted, accepted);
        reached(drafted, accepted, horizon, 1, &top, &got);
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
