"""Build script for spmbpe's C extension ``spmbpe._core``.

All project metadata lives in pyproject.toml; this file only defines the
extension and how its C source is obtained.

The extension is compiled from ``spmbpe/_core.c`` plus every ``csrc/*.c``.
``spmbpe/_core.c`` is generated from ``spmbpe/_core.pyx`` by Cython, is not
kept in git, and is shipped in the sdist.  The rule:

* ``spmbpe/_core.c`` exists, is up to date, and ``SPMBPE_CYTHONIZE`` is not
  ``1``: compile that C file and do not import Cython at all (Cython is even
  hidden from this process, so that setuptools does not import it either).
* ``spmbpe/_core.c`` is older than ``spmbpe/*.pyx``, ``spmbpe/*.pxd`` or
  ``csrc/*.h``: re-generate it if Cython can be imported; otherwise warn and
  compile the existing C file.
* ``spmbpe/_core.c`` is missing, or ``SPMBPE_CYTHONIZE=1``: generate it with
  Cython (language_level=3); fail with a clear message if Cython is missing.

``python -m build --sdist`` (or ``setup.py sdist``) applies the same rule
before packing, so the sdist always contains an up-to-date generated C file.
"""

import glob
import os
import sys
from importlib.util import find_spec

PKG = "spmbpe"
PYX = "spmbpe/_core.pyx"
C_FILE = "spmbpe/_core.c"
CSRC = "csrc"

# setuptools runs this file from the project directory; be robust anyway.
HERE = os.path.dirname(os.path.abspath(__file__))
if os.path.abspath(os.getcwd()) != HERE:
    os.chdir(HERE)


def _log(msg):
    print("spmbpe: " + msg, flush=True)


def _cython_inputs():
    """Files whose change means spmbpe/_core.c must be re-generated."""
    return sorted(
        glob.glob(os.path.join(PKG, "*.pyx"))
        + glob.glob(os.path.join(PKG, "*.pxd"))
        + glob.glob(os.path.join(CSRC, "*.h"))
    )


def _newer_inputs():
    c_mtime = os.path.getmtime(C_FILE)
    return [p for p in _cython_inputs() if os.path.getmtime(p) > c_mtime]


def _decide():
    """Return (use_cython, reason)."""
    if os.environ.get("SPMBPE_CYTHONIZE", "") == "1":
        return True, "SPMBPE_CYTHONIZE=1"
    if not os.path.exists(C_FILE):
        return True, C_FILE + " does not exist"
    newer = _newer_inputs()
    if newer:
        # find_spec on a top-level name does not import the package.
        if find_spec("Cython") is not None:
            return True, "%s is newer than %s" % (newer[0], C_FILE)
        _log(
            "WARNING: %s is newer than %s but Cython is not installed; "
            "compiling the existing C file, which may be out of date"
            % (newer[0], C_FILE)
        )
    return False, None


USE_CYTHON, REASON = _decide()


class _HideCython:
    """Meta-path finder that makes ``import Cython`` fail in this process.

    setuptools.command.build_ext imports Cython.Distutils whenever it can;
    when we build from the shipped C file we want no Cython at all.
    """

    def find_spec(self, name, path=None, target=None):
        if name == "Cython" or name.startswith("Cython."):
            raise ModuleNotFoundError(
                "Cython is not used when building spmbpe from %s" % C_FILE,
                name=name,
            )
        return None


if not USE_CYTHON:
    sys.meta_path.insert(0, _HideCython())

# Imported only after the decision above (see _HideCython).
from setuptools import Extension, setup  # noqa: E402
from setuptools.command.build_ext import build_ext as _build_ext  # noqa: E402
from setuptools.command.sdist import sdist as _sdist  # noqa: E402

_generated = False


def _generate_c():
    """Run Cython on spmbpe/_core.pyx (at most once per process)."""
    global _generated
    if _generated:
        return
    try:
        from Cython.Build import cythonize
    except ImportError as exc:
        raise SystemExit(
            "error: building spmbpe needs Cython>=3.0 to generate %s from %s "
            "(%s), but Cython cannot be imported: %s\n"
            "Install Cython (python -m pip install 'Cython>=3.0'), or build "
            "from an sdist, which ships the generated C file."
            % (C_FILE, PYX, REASON, exc)
        )
    _log("cythonizing %s (%s)" % (PYX, REASON))
    cythonize(
        [Extension("spmbpe._core", [PYX], include_dirs=[CSRC])],
        compiler_directives={"language_level": 3},
        force=True,
    )
    if not os.path.exists(C_FILE):
        raise SystemExit("error: Cython did not produce %s" % C_FILE)
    _generated = True


class build_ext(_build_ext):
    def run(self):
        if USE_CYTHON:
            _generate_c()
        else:
            _log("compiling the pre-generated %s (Cython not used)" % C_FILE)
        super().run()

    def build_extensions(self):
        # gcc / clang (unix, mingw32, cygwin) get -O3; MSVC keeps its defaults.
        if self.compiler.compiler_type != "msvc":
            for ext in self.extensions:
                ext.extra_compile_args = ["-O3"] + list(ext.extra_compile_args or [])
        super().build_extensions()


class sdist(_sdist):
    def run(self):
        # Before egg_info builds the file list, so MANIFEST.in picks it up.
        if USE_CYTHON:
            _generate_c()
        super().run()

    def make_release_tree(self, base_dir, files):
        super().make_release_tree(base_dir, files)
        if not os.path.exists(os.path.join(base_dir, C_FILE)):
            raise SystemExit("error: %s is missing from the sdist" % C_FILE)


setup(
    ext_modules=[
        Extension(
            "spmbpe._core",
            sources=[C_FILE] + sorted(glob.glob(os.path.join(CSRC, "*.c"))),
            include_dirs=[CSRC],
            depends=_cython_inputs(),
        )
    ],
    cmdclass={"build_ext": build_ext, "sdist": sdist},
)
