/* Callgrind's client requests for Python: scenarios.counts._callgrind.
 *
 * Client requests are a special instruction sequence valgrind recognises
 * (inline assembly in valgrind.h): ctypes cannot issue them, so this small
 * extension does.  Natively each request is a handful of no-op instructions
 * and running_on_valgrind() returns 0.  Built on demand by
 * scenarios.counts.build with the compiler Python was built with.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <valgrind/callgrind.h>

static PyObject *
running_on_valgrind(PyObject *self, PyObject *unused)
{
    return PyLong_FromLong((long)RUNNING_ON_VALGRIND);
}

static PyObject *
zero_stats(PyObject *self, PyObject *unused)
{
    CALLGRIND_ZERO_STATS;
    Py_RETURN_NONE;
}

static PyObject *
dump_stats_at(PyObject *self, PyObject *arg)
{
    const char *label = PyUnicode_AsUTF8(arg);
    if (label == NULL)
        return NULL;
    CALLGRIND_DUMP_STATS_AT(label);
    Py_RETURN_NONE;
}

static PyObject *
start_instrumentation(PyObject *self, PyObject *unused)
{
    CALLGRIND_START_INSTRUMENTATION;
    Py_RETURN_NONE;
}

static PyObject *
stop_instrumentation(PyObject *self, PyObject *unused)
{
    CALLGRIND_STOP_INSTRUMENTATION;
    Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"running_on_valgrind", running_on_valgrind, METH_NOARGS,
     "How many valgrinds this process runs under (0: natively)."},
    {"zero_stats", zero_stats, METH_NOARGS,
     "CALLGRIND_ZERO_STATS: zero the calling thread's counts."},
    {"dump_stats_at", dump_stats_at, METH_O,
     "CALLGRIND_DUMP_STATS_AT(label): write the counts so far, labelled, "
     "and zero them."},
    {"start_instrumentation", start_instrumentation, METH_NOARGS,
     "CALLGRIND_START_INSTRUMENTATION (with --instr-atstart=no)."},
    {"stop_instrumentation", stop_instrumentation, METH_NOARGS,
     "CALLGRIND_STOP_INSTRUMENTATION: dump before it, never after."},
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_callgrind",
    "Callgrind's client requests (valgrind/callgrind.h).", -1, methods};

PyMODINIT_FUNC
PyInit__callgrind(void)
{
    return PyModule_Create(&module);
}
