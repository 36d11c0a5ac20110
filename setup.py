"""Ship the hand-written C runtime inside the wheel, next to the package that compiles against it."""

import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py


class BuildPyWithRuntime(build_py):
    def run(self) -> None:
        super().run()
        shutil.copytree("runtime", Path(self.build_lib) / "tfc" / "runtime", dirs_exist_ok=True)


setup(cmdclass={"build_py": BuildPyWithRuntime})
