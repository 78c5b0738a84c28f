/* apiprof.engine.timeouts._callguard — per-call time limits without a system call per call.
 *
 * Arming two interval timers around every call of a scenario costs four setitimer() system
 * calls per run, and each short call then starts right after a kernel entry, with cold caches
 * and branch predictors: a 150 ns function reads ~10% slower than it runs in a caller's loop.
 * Here a limited call only notes its start (CLOCK_MONOTONIC, read in user space) and sets a
 * flag; the timers are armed by the first call of a stretch of calls and stay armed until
 * disarm(). When one fires, a C signal handler — no Python code, no allocation, nothing a
 * profiler's callbacks can see — compares the clock with the running call's deadline:
 *
 *   ITIMER_REAL / SIGALRM  not due yet: re-armed for what is left of the running call's limit
 *                          (so a hang is caught at its own deadline, not the stretch's);
 *                          due: the interrupt is handed to Python (PyErr_SetInterruptEx), whose
 *                          handler, on_alarm() below, raises the timeout class in the call;
 *                          no call running: the timer lapses (the next call re-arms it).
 *   ITIMER_PROF / SIGPROF  the stop for code stuck in C, which never reaches Python's handler:
 *                          re-armed with what is left of limit + grace (in wall time) while the
 *                          call is within it, else the process ends by SIGPROF at once.
 *
 * Between deadlines the handlers run at most once per `limit` seconds of wall time (and per
 * limit + grace of CPU time), outside Python. Nested limited calls restore the outer call's
 * deadline when the inner one returns (two system calls, only then).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>

#include <errno.h>
#include <math.h>
#include <signal.h>
#include <sys/time.h>
#include <time.h>

static volatile sig_atomic_t running = 0;      /* a limited call is under way */
static volatile double started = 0.0;          /* its start: CLOCK_MONOTONIC_COARSE s */
static volatile double limit = 0.0;            /* its limit, seconds */
static volatile sig_atomic_t alarm_armed = 0;  /* ITIMER_REAL pending for the stretch */
static volatile sig_atomic_t stop_armed = 0;   /* ITIMER_PROF pending for the stretch */
static double armed_limit = 0.0;               /* the limit the pending timers were set for */
static double grace = -1.0;                    /* < 0: no stop (only workers enable it) */
static int installed = 0;                      /* saved_* hold the dispositions to restore */
static struct sigaction saved_alarm, saved_stop;
static PyObject *timeout_class = NULL;         /* raised by on_alarm() */

static double
monotonic(void)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC_COARSE, &now); /* a vDSO read, no kernel entry */
    return (double)now.tv_sec + (double)now.tv_nsec * 1e-9;
}

static void
set_timer(int which, double seconds)
{
    struct itimerval value = {{0, 0}, {0, 0}};
    if (seconds > 0) {
        if (seconds < 1e-6) {
            seconds = 1e-6; /* due: fire at once (0 would disarm) */
        }
        value.it_value.tv_sec = (time_t)seconds;
        value.it_value.tv_usec = (suseconds_t)((seconds - (double)value.it_value.tv_sec) * 1e6);
        if (value.it_value.tv_sec == 0 && value.it_value.tv_usec == 0) {
            value.it_value.tv_usec = 1;
        }
    }
    setitimer(which, &value, NULL);
}

static double
time_left(double extra)
{
    return started + limit + extra - monotonic();
}

/* What both signal handlers do first: between calls the timer lapses (the next call arms it);
 * a running call that is not due gets the timer back for what is left of its limit (+ extra).
 * Returns whether the running call is due. */
static int
due(int which, double extra, volatile sig_atomic_t *armed)
{
    if (!running) {
        *armed = 0;
        return 0;
    }
    double left = time_left(extra);
    if (left > 0) {
        set_timer(which, left);
        return 0;
    }
    *armed = 0;
    return 1;
}

static void
alarm_signal(int signum)
{
    int saved_errno = errno;
    if (due(ITIMER_REAL, 0.0, &alarm_armed)) {
        PyErr_SetInterruptEx(SIGALRM); /* Python runs on_alarm() at its next bytecode */
    }
    errno = saved_errno;
}

static void
stop_signal(int signum)
{
    int saved_errno = errno;
    if (due(ITIMER_PROF, grace, &stop_armed)) {
        struct sigaction end;
        memset(&end, 0, sizeof end);
        end.sa_handler = SIG_DFL;
        sigemptyset(&end.sa_mask);
        sigaction(SIGPROF, &end, NULL);
        raise(SIGPROF); /* blocked until this handler returns, then ends the process */
    }
    errno = saved_errno;
}

static void
take_signal(int signum, void (*handler)(int), struct sigaction *saved)
{
    struct sigaction ours, current;
    if (sigaction(signum, NULL, &current) == 0 && current.sa_handler == handler) {
        return;
    }
    memset(&ours, 0, sizeof ours);
    sigemptyset(&ours.sa_mask);
    /* no SA_RESTART: a call hanging in a system call (a sleep) must see EINTR, as with
     * Python's own handler; Python retries interrupted calls when its handler did not raise */
    ours.sa_handler = handler;
    sigaction(signum, &ours, installed ? NULL : saved);
}

static void
install_handlers(void)
{
    /* checked whenever a timer is armed (once per stretch, or after a timer lapsed): code that
     * called signal.signal() in between (an alarm() block, a test) took the signal back */
    take_signal(SIGALRM, alarm_signal, &saved_alarm);
    if (grace >= 0) {
        take_signal(SIGPROF, stop_signal, &saved_stop);
    }
    installed = 1;
}

static void
arm(double seconds)
{
    if (seconds != armed_limit) {
        alarm_armed = stop_armed = 0; /* a shorter limit must not wait for a longer timer */
        armed_limit = seconds;
    }
    if (!alarm_armed || (grace >= 0 && !stop_armed)) {
        install_handlers();
    }
    /* the flag first: a timer firing right after being set must be able to clear it */
    if (!alarm_armed) {
        alarm_armed = 1;
        set_timer(ITIMER_REAL, seconds);
    }
    if (grace >= 0 && !stop_armed) {
        stop_armed = 1;
        set_timer(ITIMER_PROF, seconds + grace);
    }
}

/* ---- Limited: fn wrapped so that each call is limited --------------------------------- */

typedef struct {
    PyObject_HEAD
    PyObject *fn;
    double seconds;
    vectorcallfunc vectorcall;
} Limited;

static PyObject *
limited_vectorcall(PyObject *op, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    Limited *self = (Limited *)op;
    int outer = running;
    double outer_started = started, outer_limit = limit;
    running = 0; /* the handlers never see a half-written start */
    started = monotonic();
    limit = self->seconds;
    running = 1;
    arm(self->seconds);
    PyObject *result = PyObject_Vectorcall(self->fn, args, nargsf, kwnames);
    running = 0;
    if (outer) { /* give the enclosing call its own deadline back */
        started = outer_started;
        limit = outer_limit;
        running = 1;
        armed_limit = outer_limit;
        alarm_armed = 1;
        set_timer(ITIMER_REAL, fmax(time_left(0.0), 1e-6));
        if (grace >= 0) {
            stop_armed = 1;
            set_timer(ITIMER_PROF, fmax(time_left(grace), 1e-6));
        }
    }
    return result;
}

static PyObject *
limited_new(PyTypeObject *type, PyObject *args, PyObject *kwargs)
{
    static char *names[] = {"fn", "seconds", NULL};
    PyObject *fn;
    double seconds;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "Od:Limited", names, &fn, &seconds)) {
        return NULL;
    }
    if (!PyCallable_Check(fn) || !(seconds > 0)) {
        PyErr_SetString(PyExc_ValueError, "Limited(fn, seconds) needs a callable and seconds > 0");
        return NULL;
    }
    Limited *self = (Limited *)type->tp_alloc(type, 0);
    if (self == NULL) {
        return NULL;
    }
    self->fn = Py_NewRef(fn);
    self->seconds = seconds;
    self->vectorcall = limited_vectorcall;
    return (PyObject *)self;
}

static int
limited_traverse(Limited *self, visitproc visit, void *arg)
{
    Py_VISIT(self->fn);
    return 0;
}

static int
limited_clear(Limited *self)
{
    Py_CLEAR(self->fn);
    return 0;
}

static void
limited_dealloc(Limited *self)
{
    PyObject_GC_UnTrack(self);
    limited_clear(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyMemberDef limited_members[] = {
    {"seconds", T_DOUBLE, offsetof(Limited, seconds), READONLY, "the limit of each call"},
    {NULL},
};

static PyTypeObject LimitedType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "apiprof.engine.timeouts._callguard.Limited",
    .tp_basicsize = sizeof(Limited),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL,
    .tp_doc = "Limited(fn, seconds): fn() with its time limited (see the module docstring).",
    .tp_new = limited_new,
    .tp_call = PyVectorcall_Call,
    .tp_vectorcall_offset = offsetof(Limited, vectorcall),
    .tp_traverse = (traverseproc)limited_traverse,
    .tp_clear = (inquiry)limited_clear,
    .tp_dealloc = (destructor)limited_dealloc,
    .tp_members = limited_members,
};

/* ---- module functions ----------------------------------------------------------------- */

static PyObject *
on_alarm(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    /* Python's SIGALRM handler: raise in a call that is due; a stray or early signal (an
     * enclosing alarm() that replaced our sigaction, say) re-arms for the running call */
    if (!running) {
        alarm_armed = 0; /* lapsed: the next call arms it again */
        Py_RETURN_NONE;
    }
    double left = time_left(0.0);
    if (left <= 0) {
        alarm_armed = 0;
        PyErr_SetNone(timeout_class ? timeout_class : PyExc_TimeoutError);
        return NULL;
    }
    alarm_armed = 1;
    set_timer(ITIMER_REAL, left);
    Py_RETURN_NONE;
}

static PyObject *
configure(PyObject *module, PyObject *args)
{
    PyObject *cls;
    double stop_grace;
    if (!PyArg_ParseTuple(args, "Od:configure", &cls, &stop_grace)) {
        return NULL;
    }
    if (!PyExceptionClass_Check(cls)) {
        PyErr_SetString(PyExc_TypeError, "configure() needs an exception class");
        return NULL;
    }
    Py_XSETREF(timeout_class, Py_NewRef(cls));
    grace = stop_grace;
    Py_RETURN_NONE;
}

static PyObject *
disarm(PyObject *module, PyObject *unused)
{
    if (alarm_armed) {
        alarm_armed = 0;
        set_timer(ITIMER_REAL, 0);
    }
    if (stop_armed) {
        stop_armed = 0;
        set_timer(ITIMER_PROF, 0);
    }
    if (installed) {
        sigaction(SIGALRM, &saved_alarm, NULL);
        if (grace >= 0) {
            sigaction(SIGPROF, &saved_stop, NULL);
        }
        installed = 0;
    }
    armed_limit = 0.0;
    Py_RETURN_NONE;
}

static PyObject *
state(PyObject *module, PyObject *unused)
{
    return Py_BuildValue(
        "{s:O,s:O,s:O,s:O}", "running", running ? Py_True : Py_False, "alarm_armed",
        alarm_armed ? Py_True : Py_False, "stop_armed", stop_armed ? Py_True : Py_False,
        "installed", installed ? Py_True : Py_False);
}

static PyMethodDef methods[] = {
    {"on_alarm", (PyCFunction)(void (*)(void))on_alarm, METH_FASTCALL,
     "on_alarm(signum, frame): the SIGALRM handler to give signal.signal()."},
    {"configure", configure, METH_VARARGS,
     "configure(timeout_class, stop_grace): what on_alarm raises; the CPU stop's grace in "
     "seconds past the limit (< 0: no stop)."},
    {"disarm", disarm, METH_NOARGS, "Stop the timers and restore the signal dispositions."},
    {"state", state, METH_NOARGS, "The guard's flags (for tests)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef moduledef = {
    PyModuleDef_HEAD_INIT, "_callguard",
    "Per-call time limits armed once per stretch of calls (see _callguard.c).", -1, methods,
};

PyMODINIT_FUNC
PyInit__callguard(void)
{
    if (PyType_Ready(&LimitedType) < 0) {
        return NULL;
    }
    PyObject *module = PyModule_Create(&moduledef);
    if (module == NULL) {
        return NULL;
    }
    if (PyModule_AddObjectRef(module, "Limited", (PyObject *)&LimitedType) < 0) {
        Py_DECREF(module);
        return NULL;
    }
    return module;
}
