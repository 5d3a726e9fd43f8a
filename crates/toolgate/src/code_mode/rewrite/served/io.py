# io, served to programs: StringIO, text in memory (for csv and friends).
class _io_StringIO:
    def __init__(self, initial_value=""):
        self._text = initial_value or ""
        self._pos = 0
    def write(self, s):
        self._text = self._text[:self._pos] + s + self._text[self._pos + len(s):]
        self._pos += len(s)
        return len(s)
    def writelines(self, lines):
        for line in lines:
            self.write(line)
    def getvalue(self):
        return self._text
    def read(self, size=-1):
        end = len(self._text) if size is None or size < 0 else self._pos + size
        out = self._text[self._pos:end]
        self._pos += len(out)
        return out
    def readline(self):
        end = self._text.find("\n", self._pos)
        end = len(self._text) if end < 0 else end + 1
        out = self._text[self._pos:end]
        self._pos = end
        return out
    def readlines(self):
        lines = self._text[self._pos:].splitlines(True)
        self._pos = len(self._text)
        return lines
    def seek(self, pos, whence=0):
        self._pos = pos if whence == 0 else len(self._text) + pos if whence == 2 else self._pos + pos
        return self._pos
    def tell(self):
        return self._pos
    def truncate(self, size=None):
        self._text = self._text[:self._pos if size is None else size]
    def close(self):
        pass
    def __iter__(self):
        return iter(self.readlines())
class io:
    StringIO = _io_StringIO
