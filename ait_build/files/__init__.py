"""The files ait-build reads and writes on a user's behalf: `read.py` opens only regular files,
without ever blocking on a FIFO or streaming a device; `output.py` writes the files a command is
told to write (-o, --json, --copy, init), checked before the work and never replacing a device,
an input or a file through a link out of the project. docs/security.md says what each command
writes and where."""
