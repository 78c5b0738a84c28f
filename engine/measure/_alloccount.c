/* apiprof.engine._alloccount — a cumulative "bytes allocated by this thread" counter.
 *
 * tracemalloc only knows current and peak traced memory; a profiler that attributes
 * allocation to calls needs a monotonically growing counter it can read at call entry and
 * exit. This module wraps the RAW, MEM and OBJ allocator domains (the same runtime hook
 * tracemalloc uses) and adds every requested size to a thread-local counter:
 *
 *   malloc(n), calloc(k, m)  count n and k*m bytes;
 *   realloc(p, n)            counts n (a grow-by-copy would allocate n too; the old size is not
 *                            known without a table, which would cost more than the count);
 *   free                     counts nothing (the counter is "allocated", not "in use").
 *
 * A nested call from one domain into another (pymalloc falls back to PyMem_RawMalloc for large
 * blocks) is counted once, by the outermost wrapper. pause()/resume() stop counting in the
 * calling thread so a profiler hook can do its own bookkeeping without charging it to the code
 * it measures. Objects served from CPython free lists never reach the allocator and count 0.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

static _Thread_local unsigned long long tl_allocated = 0;
static _Thread_local int tl_depth = 0;   /* >0 while inside a wrapper or paused */

typedef struct {
    PyMemAllocatorEx original;
} domain_state;

static domain_state states[3];
static int installed = 0;
static const PyMemAllocatorDomain domains[3] = {
    PYMEM_DOMAIN_RAW, PYMEM_DOMAIN_MEM, PYMEM_DOMAIN_OBJ};

static void *
count_malloc(void *ctx, size_t size)
{
    PyMemAllocatorEx *orig = &((domain_state *)ctx)->original;
    if (tl_depth) {
        return orig->malloc(orig->ctx, size);
    }
    tl_depth++;
    void *p = orig->malloc(orig->ctx, size);
    tl_depth--;
    if (p != NULL) {
        tl_allocated += size;
    }
    return p;
}

static void *
count_calloc(void *ctx, size_t nelem, size_t elsize)
{
    PyMemAllocatorEx *orig = &((domain_state *)ctx)->original;
    if (tl_depth) {
        return orig->calloc(orig->ctx, nelem, elsize);
    }
    tl_depth++;
    void *p = orig->calloc(orig->ctx, nelem, elsize);
    tl_depth--;
    if (p != NULL) {
        tl_allocated += (unsigned long long)nelem * elsize;
    }
    return p;
}

static void *
count_realloc(void *ctx, void *ptr, size_t size)
{
    PyMemAllocatorEx *orig = &((domain_state *)ctx)->original;
    if (tl_depth) {
        return orig->realloc(orig->ctx, ptr, size);
    }
    tl_depth++;
    void *p = orig->realloc(orig->ctx, ptr, size);
    tl_depth--;
    if (p != NULL) {
        tl_allocated += size;
    }
    return p;
}

static void
count_free(void *ctx, void *ptr)
{
    PyMemAllocatorEx *orig = &((domain_state *)ctx)->original;
    orig->free(orig->ctx, ptr);
}

static PyObject *
counter_install(PyObject *module, PyObject *unused)
{
    /* A pause left open by a hook that was interrupted (a timeout raised between pause and
     * resume) must not silence the next pass: a new pass starts unpaused in this thread. */
    tl_depth = 0;
    if (installed) {
        Py_RETURN_FALSE;
    }
    for (int i = 0; i < 3; i++) {
        PyMem_GetAllocator(domains[i], &states[i].original);
    }
    for (int i = 0; i < 3; i++) {
        PyMemAllocatorEx hook = {&states[i], count_malloc, count_calloc, count_realloc, count_free};
        PyMem_SetAllocator(domains[i], &hook);
    }
    installed = 1;
    Py_RETURN_TRUE;
}

static PyObject *
counter_uninstall(PyObject *module, PyObject *unused)
{
    if (!installed) {
        Py_RETURN_FALSE;
    }
    for (int i = 0; i < 3; i++) {
        PyMemAllocatorEx current;
        PyMem_GetAllocator(domains[i], &current);
        if (current.malloc != count_malloc || current.ctx != &states[i]) {
            PyErr_SetString(PyExc_RuntimeError,
                            "another allocator hook (e.g. tracemalloc) was installed on top of "
                            "apiprof's counter; stop it before uninstalling the counter");
            return NULL;
        }
    }
    for (int i = 0; i < 3; i++) {
        PyMem_SetAllocator(domains[i], &states[i].original);
    }
    installed = 0;
    Py_RETURN_TRUE;
}

static PyObject *
allocated(PyObject *module, PyObject *unused)
{
    return PyLong_FromUnsignedLongLong(tl_allocated);
}

static PyObject *
counter_pause(PyObject *module, PyObject *unused)
{
    /* Read first, then pause: the int built for the result is not counted. */
    unsigned long long now = tl_allocated;
    tl_depth++;
    return PyLong_FromUnsignedLongLong(now);
}

static PyObject *
counter_resume(PyObject *module, PyObject *unused)
{
    if (tl_depth > 0) {
        tl_depth--;
    }
    Py_RETURN_NONE;
}

static PyObject *
pause_depth(PyObject *module, PyObject *unused)
{
    return PyLong_FromLong(tl_depth);
}

static PyObject *
is_installed(PyObject *module, PyObject *unused)
{
    return PyBool_FromLong(installed);
}

static PyMethodDef methods[] = {
    {"install", counter_install, METH_NOARGS, "Wrap the RAW/MEM/OBJ allocators; False if already installed."},
    {"uninstall", counter_uninstall, METH_NOARGS, "Restore the original allocators; False if not installed."},
    {"allocated", allocated, METH_NOARGS, "Bytes requested so far by the calling thread while installed."},
    {"pause", counter_pause, METH_NOARGS, "Stop counting in this thread; returns the counter read before pausing."},
    {"resume", counter_resume, METH_NOARGS, "Undo one pause() in this thread."},
    {"depth", pause_depth, METH_NOARGS, "Open pause() calls in this thread (0 while counting)."},
    {"is_installed", is_installed, METH_NOARGS, "Whether the wrappers are in place."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef moduledef = {
    PyModuleDef_HEAD_INIT, "_alloccount",
    "Cumulative per-thread allocation counter for apiprof's allocation pass.", -1, methods,
};

PyMODINIT_FUNC
PyInit__alloccount(void)
{
    return PyModule_Create(&moduledef);
}
