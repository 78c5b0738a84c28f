/* apiprof.engine.measure._quicken — put back the superinstructions sys.monitoring strips (3.12).
 *
 * CPython 3.12 rewrites some pairs of instructions into one "superinstruction" when it creates
 * a code object (LOAD_FAST then LOAD_CONST becomes LOAD_FAST__LOAD_CONST, and four more pairs).
 * The first time sys.monitoring instruments a code object for any event, it turns every
 * superinstruction back into its first half, and nothing ever makes them again. A code object
 * that ran once under a global monitoring tool (the allocation pass) therefore runs different
 * bytecode afterwards than in a plain process, and on 3.12 that moves its time measurably
 * (docs/mechanisms.rst, "Measured code runs as in a plain process").
 *
 * restore(code, tables) repeats the interpreter's own pairing rule on the code object's current
 * instructions: where two consecutive instructions (no inline cache in between) form one of the
 * five pairs and the first is still plain, the first becomes the superinstruction. Only the
 * opcode byte of the first half changes; the second instruction stays, so a jump to it still
 * runs it alone. ``tables`` is 512 bytes built by quicken.py from the ``opcode`` module: the
 * base opcode of every opcode (0 where it cannot be known from the opcode alone, e.g.
 * INSTRUMENTED_LINE), then the inline cache entries of every base opcode. A code object with
 * an opcode of unknown base is left untouched (-1): its instruction lengths are not known.
 * Instrumented instructions never take part in a pair (their opcodes are not plain), so the
 * events of any tool still fire.
 *
 * On other versions (3.11 has no sys.monitoring; 3.13 makes no superinstructions at run time)
 * restore() changes nothing and returns 0.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <opcode.h>

#if PY_VERSION_HEX >= 0x030C0000 && PY_VERSION_HEX < 0x030D0000 && defined(LOAD_FAST__LOAD_CONST)
#define HAS_SUPERINSTRUCTIONS 1
#else
#define HAS_SUPERINSTRUCTIONS 0
#endif

#define TABLE_SIZE 256

#if HAS_SUPERINSTRUCTIONS
/* The superinstruction for (first, second), 0 when the pair has none (specialize.c's rule). */
static int
super_for(int first, int second)
{
    switch (first << 8 | second) {
        case LOAD_CONST << 8 | LOAD_FAST:
            return LOAD_CONST__LOAD_FAST;
        case LOAD_FAST << 8 | LOAD_CONST:
            return LOAD_FAST__LOAD_CONST;
        case LOAD_FAST << 8 | LOAD_FAST:
            return LOAD_FAST__LOAD_FAST;
        case STORE_FAST << 8 | LOAD_FAST:
            return STORE_FAST__LOAD_FAST;
        case STORE_FAST << 8 | STORE_FAST:
            return STORE_FAST__STORE_FAST;
        default:
            return 0;
    }
}

/* Walk the instructions; with write == 0 only check that every base opcode is known (-1 if
 * not), with write == 1 make the missing superinstructions. Returns how many were made. */
static Py_ssize_t
pair_up(PyCodeObject *code, const unsigned char *deopt, const unsigned char *caches, int write)
{
    _Py_CODEUNIT *instructions = _PyCode_CODE(code);
    Py_ssize_t length = Py_SIZE(code), made = 0;
    int previous = 0;
    for (Py_ssize_t i = 0; i < length; i++) {
        int base = deopt[instructions[i].op.code];
        if (base == 0) {
            return -1;
        }
        if (caches[base]) {
            previous = base;
            i += caches[base];
            continue;
        }
        int super = i > 0 ? super_for(previous, base) : 0;
        if (super && instructions[i - 1].op.code == previous) {
            if (write) {
                instructions[i - 1].op.code = (uint8_t)super;
            }
            made++;
        }
        previous = base;
    }
    return made;
}
#endif

static PyObject *
restore(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 2 || !PyCode_Check(args[0]) || !PyBytes_Check(args[1])
        || PyBytes_GET_SIZE(args[1]) != 2 * TABLE_SIZE) {
        PyErr_SetString(PyExc_TypeError, "restore(code, tables): a code object and 512 bytes");
        return NULL;
    }
#if HAS_SUPERINSTRUCTIONS
    PyCodeObject *code = (PyCodeObject *)args[0];
    const unsigned char *deopt = (const unsigned char *)PyBytes_AS_STRING(args[1]);
    const unsigned char *caches = deopt + TABLE_SIZE;
    if (pair_up(code, deopt, caches, 0) < 0) {
        return PyLong_FromLong(-1);
    }
    return PyLong_FromSsize_t(pair_up(code, deopt, caches, 1));
#else
    return PyLong_FromLong(0);
#endif
}

static int
add_constants(PyObject *module)
{
    return PyModule_AddIntConstant(module, "ACTIVE", HAS_SUPERINSTRUCTIONS);
}

static PyMethodDef quicken_methods[] = {
    {"restore", (PyCFunction)(void (*)(void))restore, METH_FASTCALL,
     "restore(code, tables) -> superinstructions made (-1: an opcode of unknown base; left "
     "untouched)."},
    {NULL, NULL, 0, NULL},
};

static PyModuleDef_Slot quicken_slots[] = {
    {Py_mod_exec, add_constants},
    {0, NULL},
};

/* Multi-phase initialisation: the module keeps no state, any interpreter may load it. */
static struct PyModuleDef quicken_module = {
    PyModuleDef_HEAD_INIT,
    .m_name = "_quicken",
    .m_doc = "Put back the superinstructions sys.monitoring splits in code objects (CPython 3.12).",
    .m_size = 0,
    .m_methods = quicken_methods,
    .m_slots = quicken_slots,
};

PyMODINIT_FUNC
PyInit__quicken(void)
{
    return PyModuleDef_Init(&quicken_module);
}
