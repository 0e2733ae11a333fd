"""What pyproject.toml cannot say: a built package carries the C runner kit (native/kit, the one copy in the
repository) as pytest_zbench/kit, so an engine builds against the kit of the host that measures it
(pytest_zbench/kit_files.py). An editable install or a checkout reads native/kit where it is."""

from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

KIT_SUFFIXES = (".c", ".h", ".mk")


class BuildWithKit(build_py):
    def run(self) -> None:
        super().run()
        if self.editable_mode:
            return
        source = Path(__file__).resolve().parent / "native" / "kit"
        target = Path(self.build_lib) / "pytest_zbench" / "kit"
        self.mkpath(str(target))
        for file in sorted(source.iterdir()):
            if file.suffix in KIT_SUFFIXES:
                self.copy_file(str(file), str(target / file.name))


setup(cmdclass={"build_py": BuildWithKit})
