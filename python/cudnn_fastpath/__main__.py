"""``python -m cudnn_fastpath`` and the ``cudnn-fastpath`` console script: both run the launcher
script this package carries (the same one as scripts/cudnn-fastpath in the source tree), telling it
to preload the shim of this package; options, output and exit statuses are the script's."""

import os
import sys

from cudnn_fastpath import launcher_path, shim_path


def main(argv=None):
    args = sys.argv[1:] if argv is None else list(argv)
    script = launcher_path()
    if not os.path.isfile(script):
        sys.stderr.write("cudnn-fastpath: broken install: %s is missing; reinstall the cudnn-fastpath package "
                         "(pip install --force-reinstall)\n" % script)
        return 1
    env = dict(os.environ)
    # The script checks that the shim is there (a missing one is a broken install, exit status 1)
    # and takes the variable out of the program's environment.
    env["CUDNN_FASTPATH_PACKAGE_SHIM"] = shim_path()
    # Through bash, so that an install that lost the file's execute bit still works.
    try:
        os.execvpe("bash", ["bash", script] + args, env)
    except OSError as error:
        sys.stderr.write("cudnn-fastpath: cannot run bash for %s: %s\n" % (script, error.strerror))
        return 127


if __name__ == "__main__":
    sys.exit(main())
