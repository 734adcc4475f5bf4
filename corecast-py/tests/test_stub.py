"""The type stub (corecast/_corecast.pyi) says what the compiled module has:
every name, every method and property of each class, each function's
parameters (from the module's own text signatures), and each exception's
place under ``Error``. A binding change the stub does not follow fails here."""

import ast
import inspect
import pathlib
import sys

import corecast
from corecast import _corecast

STUB = pathlib.Path(corecast.__file__).with_name("_corecast.pyi")


def stub_tree():
    return ast.parse(STUB.read_text())


def typed_dicts(tree):
    return {
        n.name
        for n in tree.body
        if isinstance(n, ast.ClassDef) and any(getattr(b, "id", None) == "TypedDict" for b in n.bases)
    }


def top_level(tree):
    names = set()
    for n in tree.body:
        if isinstance(n, (ast.ClassDef, ast.FunctionDef)):
            names.add(n.name)
        elif isinstance(n, ast.AnnAssign):
            names.add(n.target.id)
    return names - typed_dicts(tree)


def members(cls_node):
    return {n.name: n for n in cls_node.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}


def stub_classes(tree):
    return {n.name: n for n in tree.body if isinstance(n, ast.ClassDef)}


def params(fn):
    """Parameter names of a stub function, `*` before the keyword-only ones."""
    a = fn.args
    out = [p.arg for p in a.posonlyargs + a.args]
    if a.vararg:
        out.append("*" + a.vararg.arg)
    elif a.kwonlyargs:
        out.append("*")
    out += [p.arg for p in a.kwonlyargs]
    return [p for p in out if p != "self"]


def runtime_params(obj):
    """The same, from the compiled function's text signature."""
    sig = inspect.signature(obj)
    out = []
    for p in sig.parameters.values():
        if p.name in ("self", "$self"):
            continue
        if p.kind is p.KEYWORD_ONLY and "*" not in out and not any(x.startswith("*") for x in out):
            out.append("*")
        out.append("*" + p.name if p.kind is p.VAR_POSITIONAL else p.name)
    return out


def test_every_name_of_the_module_is_declared_and_nothing_more():
    tree = stub_tree()
    runtime = {n for n in dir(_corecast) if not n.startswith("_")} | {"__version__"}
    assert top_level(tree) == runtime


def test_every_method_and_property_of_each_class_is_declared():
    tree = stub_classes(stub_tree())
    for name in ("Channel", "Sender", "Loan", "Receiver", "Message"):
        cls = getattr(_corecast, name)
        declared = set(members(tree[name]))
        public = {n for n in vars(cls) if not n.startswith("_")}
        assert {n for n in declared if not n.startswith("_")} == public, name
        for dunder in (n for n in declared if n.startswith("__")):
            if dunder in ("__buffer__", "__release_buffer__") and sys.version_info < (3, 12):
                continue
            assert hasattr(cls, dunder), f"{name}.{dunder} is declared but the class has none"


def test_parameters_match_the_modules_own_signatures():
    tree = stub_tree()
    classes = stub_classes(tree)
    checked = 0
    for name, node in classes.items():
        if not hasattr(_corecast, name) or name in typed_dicts(tree):
            continue
        cls = getattr(_corecast, name)
        for meth, fn in members(node).items():
            obj = vars(cls).get(meth)
            if meth.startswith("__") or obj is None or isinstance(obj, property):
                continue
            target = obj.__func__ if isinstance(obj, staticmethod) else getattr(cls, meth)
            if getattr(target, "__text_signature__", None) is None:
                continue
            assert params(fn) == runtime_params(target), f"{name}.{meth}"
            checked += 1
    fn = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "list")
    assert params(fn) == runtime_params(_corecast.list)
    assert checked >= 20, f"only {checked} methods had a text signature to check"


def test_every_exception_is_declared_under_error():
    classes = stub_classes(stub_tree())
    for name, node in classes.items():
        bases = [getattr(b, "id", None) for b in node.bases]
        if "Error" in bases or name == "Error":
            cls = getattr(_corecast, name)
            assert issubclass(cls, _corecast.Error), name
    runtime_errors = {n for n in dir(_corecast) if isinstance(getattr(_corecast, n), type)
                      and issubclass(getattr(_corecast, n), _corecast.Error)}
    declared = {n for n, c in classes.items() if n == "Error" or "Error" in [getattr(b, "id", None) for b in c.bases]}
    assert declared == runtime_errors


def test_the_package_says_it_is_typed():
    assert STUB.with_name("py.typed").exists()
