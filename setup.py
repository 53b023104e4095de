"""Package discovery for the wheel: the repository root is the ``hopgraph`` package
(``package-dir`` in pyproject.toml), so each folder under it with an ``__init__.py`` is
``hopgraph.<folder>``. Found here, never listed by hand: a new subpackage ships by itself
(tests/test_packaging.py installs the built wheel and imports every module)."""

from setuptools import find_packages, setup
from setuptools.command.build_py import build_py

OUTSIDE = ["tests*", "benchmarks*", "examples*", "docs*"]


class BuildPy(build_py):
    """The package's modules, less this file (it lies in the root the package maps to)."""

    def find_package_modules(self, package, package_dir):  # noqa: ANN001, ANN201
        found = super().find_package_modules(package, package_dir)
        return [m for m in found if (m[0], m[1]) != ("hopgraph", "setup")]


setup(
    packages=["hopgraph", *(f"hopgraph.{p}" for p in find_packages(exclude=OUTSIDE))],
    cmdclass={"build_py": BuildPy},
)
