/* apiprof.engine.measure._timing — the C side of the timing passes.
 *
 * 1. Probe: sys.monitoring callbacks (3.12+) that time calls of instrumented code objects.
 *    A probe in Python costs a frame, attribute look-ups and a PyLong per timestamp; here a
 *    callback reads the site's dense id from the code object's last constant (docs/mechanisms.rst), reads
 *    the clock and stores an int64 into that site's preallocated array. Entry stores
 *    (cpu, wall) with the wall clock read last, exit (wall, cpu) with it read first, exactly
 *    like the Python probes (timing.py), so both feed the same post-processing; cpu is -1 for
 *    calls whose thread-CPU time is not sampled. Sampling is random (xorshift) at a per-site
 *    rate, so it cannot alias with periodic patterns in the scenario.
 *
 * 2. SwitchRecorder: the calling thread's context switches, from perf_event_open with
 *    context-switch records (a software dummy event, user space only, so it is allowed at
 *    perf_event_paranoid 2), timestamps on CLOCK_MONOTONIC (the clock time.perf_counter_ns
 *    reads on Linux). read() returns the completed switched-out intervals with whether the
 *    switch was a preemption, and how many records the kernel lost.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

#ifdef __linux__
#include <linux/perf_event.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

static inline int64_t
wall_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static inline int64_t
cpu_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* ------------------------------------------------------------------------------------------ */
/* Probe                                                                                      */
/* ------------------------------------------------------------------------------------------ */

typedef struct {
    int64_t *data;
    Py_ssize_t len;
    Py_ssize_t cap;
} Buf;

typedef struct {
    PyObject_HEAD
    Py_ssize_t n;
    Buf *enters;
    Buf *exits;
    uint32_t *cpu_every; /* 0: never, 1: always, k: each call with probability 1/k */
    PyObject *c_ids;      /* dict: callable -> site index (C-level targets) */
    PyObject *probe_type; /* the ProbeId type: tags instrumented code objects */
    uint64_t rng;
    Py_ssize_t errors;    /* records that could not grow (out of memory): the pass is invalid */
} Probe;

static int
buf_reserve(Buf *b, Py_ssize_t extra)
{
    if (b->len + extra <= b->cap) {
        return 0;
    }
    Py_ssize_t cap = b->cap ? b->cap * 2 : 1024;
    while (cap < b->len + extra) {
        cap *= 2;
    }
    int64_t *data = PyMem_RawRealloc(b->data, (size_t)cap * sizeof(int64_t));
    if (data == NULL) {
        return -1;
    }
    b->data = data;
    b->cap = cap;
    return 0;
}

static inline int
sample_cpu(Probe *self, Py_ssize_t i)
{
    uint32_t every = self->cpu_every[i];
    if (every <= 1) {
        return (int)every;
    }
    if (self->enters[i].len == 0) {
        return 1; /* the first recorded call, as the Python probes: few calls still get a figure */
    }
    uint64_t x = self->rng; /* xorshift64 */
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    self->rng = x;
    return (x % every) == 0;
}

static inline void
record_enter(Probe *self, Py_ssize_t i)
{
    Buf *b = &self->enters[i];
    if (buf_reserve(b, 2) < 0) {
        self->errors++;
        return;
    }
    b->data[b->len] = sample_cpu(self, i) ? cpu_ns() : -1;
    b->data[b->len + 1] = wall_ns();
    b->len += 2;
}

static inline void
record_exit(Probe *self, Py_ssize_t i, int64_t now)
{
    Buf *x = &self->exits[i];
    Buf *e = &self->enters[i];
    if (buf_reserve(x, 2) < 0) {
        self->errors++;
        return;
    }
    x->data[x->len] = now;
    x->data[x->len + 1] = (e->len >= 2 && e->data[e->len - 2] >= 0) ? cpu_ns() : -1;
    x->len += 2;
}

/* The site index of an instrumented code object, or -1 (not tagged, or out of range). */
static inline Py_ssize_t
site_of(Probe *self, PyObject *code, int check_tag)
{
    if (!PyCode_Check(code)) {
        return -1;
    }
    PyObject *consts = ((PyCodeObject *)code)->co_consts;
    Py_ssize_t size = PyTuple_GET_SIZE(consts);
    if (size == 0) {
        return -1;
    }
    PyObject *last = PyTuple_GET_ITEM(consts, size - 1);
    if (check_tag && Py_TYPE(last) != (PyTypeObject *)self->probe_type) {
        return -1;
    }
    if (!PyLong_Check(last)) {
        return -1;
    }
    Py_ssize_t i = PyLong_AsSsize_t(last);
    if (i < 0 || i >= self->n) {
        PyErr_Clear();
        return -1;
    }
    return i;
}

static Py_ssize_t
c_site_of(Probe *self, PyObject *callable)
{
    PyObject *found = PyDict_GetItemWithError(self->c_ids, callable);
    if (found == NULL) {
        PyErr_Clear(); /* unhashable callables are never targets */
        return -1;
    }
    return PyLong_AsSsize_t(found);
}

static PyObject *
probe_py_start(Probe *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs >= 1) {
        Py_ssize_t i = site_of(self, args[0], 0);
        if (i >= 0) {
            record_enter(self, i);
        }
    }
    Py_RETURN_NONE;
}

static PyObject *
probe_py_exit(Probe *self, PyObject *const *args, Py_ssize_t nargs)
{
    int64_t now = wall_ns();
    if (nargs >= 1) {
        Py_ssize_t i = site_of(self, args[0], 0);
        if (i >= 0) {
            record_exit(self, i, now);
        }
    }
    Py_RETURN_NONE;
}

static PyObject *
probe_py_throw(Probe *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs >= 1) { /* a global event: only tagged code counts */
        Py_ssize_t i = site_of(self, args[0], 1);
        if (i >= 0) {
            record_enter(self, i);
        }
    }
    Py_RETURN_NONE;
}

static PyObject *
probe_py_unwind(Probe *self, PyObject *const *args, Py_ssize_t nargs)
{
    int64_t now = wall_ns();
    if (nargs >= 1) {
        Py_ssize_t i = site_of(self, args[0], 1);
        if (i >= 0) {
            record_exit(self, i, now);
        }
    }
    Py_RETURN_NONE;
}

static PyObject *
probe_call(Probe *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs >= 3) {
        Py_ssize_t i = c_site_of(self, args[2]);
        if (i >= 0 && i < self->n) {
            record_enter(self, i);
        }
    }
    Py_RETURN_NONE;
}

static PyObject *
probe_c_exit(Probe *self, PyObject *const *args, Py_ssize_t nargs)
{
    int64_t now = wall_ns();
    if (nargs >= 3) {
        Py_ssize_t i = c_site_of(self, args[2]);
        if (i >= 0 && i < self->n) {
            record_exit(self, i, now);
        }
    }
    Py_RETURN_NONE;
}

static PyObject *
buf_to_list(Buf *b, Py_ssize_t start)
{
    if (start > b->len) {
        start = b->len;
    }
    PyObject *list = PyList_New(b->len - start);
    if (list == NULL) {
        return NULL;
    }
    for (Py_ssize_t k = start; k < b->len; k++) {
        PyObject *v = PyLong_FromLongLong(b->data[k]);
        if (v == NULL) {
            Py_DECREF(list);
            return NULL;
        }
        PyList_SET_ITEM(list, k - start, v);
    }
    return list;
}

static int
check_site(Probe *self, Py_ssize_t i)
{
    if (i < 0 || i >= self->n) {
        PyErr_Format(PyExc_IndexError, "site %zd is outside 0..%zd", i, self->n - 1);
        return -1;
    }
    return 0;
}

static PyObject *
probe_records(Probe *self, PyObject *args)
{
    Py_ssize_t i, enter_from = 0, exit_from = 0;
    if (!PyArg_ParseTuple(args, "n|nn", &i, &enter_from, &exit_from) || check_site(self, i) < 0) {
        return NULL;
    }
    PyObject *enters = buf_to_list(&self->enters[i], enter_from);
    PyObject *exits = enters ? buf_to_list(&self->exits[i], exit_from) : NULL;
    if (exits == NULL) {
        Py_XDECREF(enters);
        return NULL;
    }
    return Py_BuildValue("(NN)", enters, exits);
}

static PyObject *
probe_lengths(Probe *self, PyObject *unused)
{
    PyObject *out = PyList_New(self->n);
    if (out == NULL) {
        return NULL;
    }
    for (Py_ssize_t i = 0; i < self->n; i++) {
        PyObject *pair = Py_BuildValue("(nn)", self->enters[i].len, self->exits[i].len);
        if (pair == NULL) {
            Py_DECREF(out);
            return NULL;
        }
        PyList_SET_ITEM(out, i, pair);
    }
    return out;
}

static PyObject *
probe_truncate(Probe *self, PyObject *args)
{
    Py_ssize_t i, enters, exits;
    if (!PyArg_ParseTuple(args, "nnn", &i, &enters, &exits) || check_site(self, i) < 0) {
        return NULL;
    }
    if (enters < self->enters[i].len) {
        self->enters[i].len = enters < 0 ? 0 : enters;
    }
    if (exits < self->exits[i].len) {
        self->exits[i].len = exits < 0 ? 0 : exits;
    }
    Py_RETURN_NONE;
}

static PyObject *
probe_set_cpu_every(Probe *self, PyObject *args)
{
    Py_ssize_t i;
    unsigned int every;
    if (!PyArg_ParseTuple(args, "nI", &i, &every) || check_site(self, i) < 0) {
        return NULL;
    }
    self->cpu_every[i] = every;
    Py_RETURN_NONE;
}

static PyObject *
probe_get_errors(Probe *self, void *closure)
{
    return PyLong_FromSsize_t(self->errors);
}

static int
probe_init(Probe *self, PyObject *args, PyObject *kwds)
{
    static char *kwlist[] = {"sites", "c_ids", "probe_type", "seed", NULL};
    Py_ssize_t n;
    PyObject *c_ids, *probe_type;
    unsigned long long seed = 0x9E3779B97F4A7C15ULL;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "nO!O!|K", kwlist, &n, &PyDict_Type, &c_ids,
                                     &PyType_Type, &probe_type, &seed)) {
        return -1;
    }
    if (n < 0 || self->enters != NULL) {
        PyErr_SetString(PyExc_ValueError, "a Probe is made once, for zero or more sites");
        return -1;
    }
    self->n = n;
    self->enters = PyMem_RawCalloc((size_t)(n ? n : 1), sizeof(Buf));
    self->exits = PyMem_RawCalloc((size_t)(n ? n : 1), sizeof(Buf));
    self->cpu_every = PyMem_RawCalloc((size_t)(n ? n : 1), sizeof(uint32_t));
    if (!self->enters || !self->exits || !self->cpu_every) {
        PyErr_NoMemory();
        return -1;
    }
    Py_INCREF(c_ids);
    self->c_ids = c_ids;
    Py_INCREF(probe_type);
    self->probe_type = probe_type;
    self->rng = seed ? seed : 1;
    return 0;
}

static void
probe_dealloc(Probe *self)
{
    for (Py_ssize_t i = 0; self->enters && i < self->n; i++) {
        PyMem_RawFree(self->enters[i].data);
        PyMem_RawFree(self->exits[i].data);
    }
    PyMem_RawFree(self->enters);
    PyMem_RawFree(self->exits);
    PyMem_RawFree(self->cpu_every);
    Py_XDECREF(self->c_ids);
    Py_XDECREF(self->probe_type);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyMethodDef probe_methods[] = {
    {"py_start", (PyCFunction)(void (*)(void))probe_py_start, METH_FASTCALL,
     "PY_START/PY_RESUME callback (code, offset)."},
    {"py_exit", (PyCFunction)(void (*)(void))probe_py_exit, METH_FASTCALL,
     "PY_RETURN/PY_YIELD callback (code, offset, value)."},
    {"py_throw", (PyCFunction)(void (*)(void))probe_py_throw, METH_FASTCALL,
     "PY_THROW callback (code, offset, exception); global, filtered on the tag."},
    {"py_unwind", (PyCFunction)(void (*)(void))probe_py_unwind, METH_FASTCALL,
     "PY_UNWIND callback (code, offset, exception); global, filtered on the tag."},
    {"call", (PyCFunction)(void (*)(void))probe_call, METH_FASTCALL,
     "CALL callback (code, offset, callable, arg0): C-level targets."},
    {"c_exit", (PyCFunction)(void (*)(void))probe_c_exit, METH_FASTCALL,
     "C_RETURN/C_RAISE callback (code, offset, callable, arg0)."},
    {"records", (PyCFunction)probe_records, METH_VARARGS,
     "records(i[, enter_from, exit_from]) -> (enters, exits) lists of ints."},
    {"lengths", (PyCFunction)probe_lengths, METH_NOARGS,
     "[(len(enters), len(exits))] per site, to discard what follows later."},
    {"truncate", (PyCFunction)probe_truncate, METH_VARARGS,
     "truncate(i, enters, exits): drop the records after these lengths."},
    {"set_cpu_every", (PyCFunction)probe_set_cpu_every, METH_VARARGS,
     "set_cpu_every(i, k): 0 never, 1 every call, k each call with probability 1/k."},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef probe_getset[] = {
    {"errors", (getter)probe_get_errors, NULL, "Records lost to failed allocations.", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyTypeObject ProbeType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "apiprof.engine.measure._timing.Probe",
    .tp_basicsize = sizeof(Probe),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Probe(sites, c_ids, probe_type, seed=...): timing callbacks and their records.",
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)probe_init,
    .tp_dealloc = (destructor)probe_dealloc,
    .tp_methods = probe_methods,
    .tp_getset = probe_getset,
};

/* ------------------------------------------------------------------------------------------ */
/* SwitchRecorder                                                                             */
/* ------------------------------------------------------------------------------------------ */

typedef struct {
    PyObject_HEAD
    int fd;
    void *base;
    size_t map_size;
    size_t data_size;
    int64_t pending_out; /* time of a switch-out whose switch-in has not been read yet */
    int pending_preempt;
    uint64_t lost;
} SwitchRecorder;

#ifdef __linux__
static int
recorder_init(SwitchRecorder *self, PyObject *args, PyObject *kwds)
{
    static char *kwlist[] = {"pages", NULL};
    int pages = 16;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "|i", kwlist, &pages)) {
        return -1;
    }
    if (pages < 1 || (pages & (pages - 1))) {
        PyErr_SetString(PyExc_ValueError, "pages must be a power of two");
        return -1;
    }
    struct perf_event_attr attr;
    memset(&attr, 0, sizeof(attr));
    attr.size = sizeof(attr);
    attr.type = PERF_TYPE_SOFTWARE;
    attr.config = PERF_COUNT_SW_DUMMY;
    attr.sample_type = PERF_SAMPLE_TID | PERF_SAMPLE_TIME;
    attr.sample_id_all = 1;
    attr.context_switch = 1;
    attr.exclude_kernel = 1;
    attr.exclude_hv = 1;
    attr.use_clockid = 1;
    attr.clockid = CLOCK_MONOTONIC;
    int fd = (int)syscall(__NR_perf_event_open, &attr, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);
    if (fd < 0) {
        PyErr_SetFromErrno(PyExc_OSError);
        return -1;
    }
    long page = sysconf(_SC_PAGESIZE);
    size_t size = (size_t)page * (size_t)(pages + 1);
    void *base = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (base == MAP_FAILED) {
        PyErr_SetFromErrno(PyExc_OSError);
        close(fd);
        return -1;
    }
    self->fd = fd;
    self->base = base;
    self->map_size = size;
    self->data_size = (size_t)page * (size_t)pages;
    self->pending_out = -1;
    return 0;
}

struct switch_record {
    struct perf_event_header header;
    uint32_t pid, tid;
    uint64_t time;
};

static PyObject *
recorder_read(SwitchRecorder *self, PyObject *unused)
{
    if (self->base == NULL) {
        PyErr_SetString(PyExc_ValueError, "the recorder is closed");
        return NULL;
    }
    struct perf_event_mmap_page *meta = self->base;
    unsigned char *data = (unsigned char *)self->base + meta->data_offset;
    size_t data_size = meta->data_size ? meta->data_size : self->data_size;
    uint64_t head = __atomic_load_n(&meta->data_head, __ATOMIC_ACQUIRE);
    uint64_t tail = meta->data_tail;
    PyObject *intervals = PyList_New(0);
    if (intervals == NULL) {
        return NULL;
    }
    while (tail < head) {
        struct perf_event_header header;
        size_t offset = tail % data_size;
        unsigned char buf[64];
        /* the header, then the record, may wrap around the end of the ring */
        for (size_t k = 0; k < sizeof(header); k++) {
            ((unsigned char *)&header)[k] = data[(offset + k) % data_size];
        }
        if (header.size == 0) {
            break;
        }
        size_t copy = header.size < sizeof(buf) ? header.size : sizeof(buf);
        for (size_t k = 0; k < copy; k++) {
            buf[k] = data[(offset + k) % data_size];
        }
        if (header.type == PERF_RECORD_SWITCH && copy >= sizeof(struct switch_record)) {
            struct switch_record *rec = (struct switch_record *)buf;
            if (header.misc & PERF_RECORD_MISC_SWITCH_OUT) {
                self->pending_out = (int64_t)rec->time;
                self->pending_preempt = (header.misc & PERF_RECORD_MISC_SWITCH_OUT_PREEMPT) != 0;
            }
            else if (self->pending_out >= 0) {
                PyObject *item = Py_BuildValue("(LLO)", (long long)self->pending_out,
                                               (long long)rec->time,
                                               self->pending_preempt ? Py_True : Py_False);
                if (item == NULL || PyList_Append(intervals, item) < 0) {
                    Py_XDECREF(item);
                    Py_DECREF(intervals);
                    return NULL;
                }
                Py_DECREF(item);
                self->pending_out = -1;
            }
        }
        else if (header.type == PERF_RECORD_LOST && copy >= sizeof(header) + 16) {
            uint64_t lost;
            memcpy(&lost, buf + sizeof(header) + 8, sizeof(lost));
            self->lost += lost;
        }
        tail += header.size;
    }
    __atomic_store_n(&meta->data_tail, tail, __ATOMIC_RELEASE);
    return Py_BuildValue("(NK)", intervals, (unsigned long long)self->lost);
}

static PyObject *
recorder_close(SwitchRecorder *self, PyObject *unused)
{
    if (self->base != NULL) {
        munmap(self->base, self->map_size);
        self->base = NULL;
    }
    if (self->fd >= 0) {
        close(self->fd);
        self->fd = -1;
    }
    Py_RETURN_NONE;
}
#else
static int
recorder_init(SwitchRecorder *self, PyObject *args, PyObject *kwds)
{
    PyErr_SetString(PyExc_OSError, "context-switch records need Linux perf_event_open");
    return -1;
}

static PyObject *
recorder_read(SwitchRecorder *self, PyObject *unused)
{
    PyErr_SetString(PyExc_ValueError, "the recorder is closed");
    return NULL;
}

static PyObject *
recorder_close(SwitchRecorder *self, PyObject *unused)
{
    Py_RETURN_NONE;
}
#endif

static PyObject *
recorder_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
    SwitchRecorder *self = (SwitchRecorder *)type->tp_alloc(type, 0);
    if (self != NULL) {
        self->fd = -1;
        self->base = NULL;
        self->pending_out = -1;
    }
    return (PyObject *)self;
}

static void
recorder_dealloc(SwitchRecorder *self)
{
    PyObject *ignored = recorder_close(self, NULL);
    Py_XDECREF(ignored);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyMethodDef recorder_methods[] = {
    {"read", (PyCFunction)recorder_read, METH_NOARGS,
     "read() -> ([(out_ns, in_ns, preempted)], lost): switched-out intervals since the last read."},
    {"close", (PyCFunction)recorder_close, METH_NOARGS, "Stop recording and free the ring."},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject SwitchRecorderType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "apiprof.engine.measure._timing.SwitchRecorder",
    .tp_basicsize = sizeof(SwitchRecorder),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "SwitchRecorder(pages=16): this thread's context switches (perf_event_open).",
    .tp_new = recorder_new,
    .tp_init = (initproc)recorder_init,
    .tp_dealloc = (destructor)recorder_dealloc,
    .tp_methods = recorder_methods,
};

static PyObject *
module_wall_ns(PyObject *module, PyObject *unused)
{
    return PyLong_FromLongLong(wall_ns());
}

/* frame.f_code raises the "object.__getattr__" audit event: in a sandboxed worker every read
 * ran the sandbox's audit hook (a Python call, ~1.9 us on 3.11) in profile hooks that read it
 * on every event. PyFrame_GetCode is the same object without the event. */
static PyObject *
module_code_of(PyObject *module, PyObject *frame)
{
    if (!PyObject_TypeCheck(frame, &PyFrame_Type)) {
        PyErr_Format(PyExc_TypeError, "code_of() expects a frame, not %.100s",
                     Py_TYPE(frame)->tp_name);
        return NULL;
    }
    return (PyObject *)PyFrame_GetCode((PyFrameObject *)frame);
}

static PyMethodDef module_methods[] = {
    {"wall_ns", module_wall_ns, METH_NOARGS, "The probes' wall clock (CLOCK_MONOTONIC, ns)."},
    {"code_of", module_code_of, METH_O,
     "code_of(frame) -> the frame's code object, without frame.f_code's audit event."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef moduledef = {
    PyModuleDef_HEAD_INIT, "_timing",
    "C timing probes for sys.monitoring and the thread's context-switch records.", -1,
    module_methods,
};

PyMODINIT_FUNC
PyInit__timing(void)
{
    if (PyType_Ready(&ProbeType) < 0 || PyType_Ready(&SwitchRecorderType) < 0) {
        return NULL;
    }
    PyObject *module = PyModule_Create(&moduledef);
    if (module == NULL) {
        return NULL;
    }
    Py_INCREF(&ProbeType);
    if (PyModule_AddObject(module, "Probe", (PyObject *)&ProbeType) < 0) {
        Py_DECREF(&ProbeType);
        Py_DECREF(module);
        return NULL;
    }
    Py_INCREF(&SwitchRecorderType);
    if (PyModule_AddObject(module, "SwitchRecorder", (PyObject *)&SwitchRecorderType) < 0) {
        Py_DECREF(&SwitchRecorderType);
        Py_DECREF(module);
        return NULL;
    }
    return module;
}
