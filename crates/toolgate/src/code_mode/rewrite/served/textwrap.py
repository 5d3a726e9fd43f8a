# textwrap, served to programs (a subset of CPython's).
def _textwrap_wrap(text, width=70):
    words = text.split()
    lines = []
    line = ""
    for word in words:
        if not line:
            line = word
        elif len(line) + 1 + len(word) <= width:
            line = line + " " + word
        else:
            lines.append(line)
            line = word
        while len(line) > width:
            lines.append(line[:width])
            line = line[width:]
    if line:
        lines.append(line)
    return lines
def _textwrap_fill(text, width=70):
    return "\n".join(_textwrap_wrap(text, width))
def _textwrap_shorten(text, width, placeholder=" [...]"):
    text = " ".join(text.split())
    if len(text) <= width:
        return text
    out = ""
    for word in text.split():
        candidate = word if not out else out + " " + word
        if len(candidate) + len(placeholder) > width:
            break
        out = candidate
    return (out + placeholder) if out else placeholder.lstrip()
def _textwrap_dedent(text):
    lines = text.split("\n")
    margins = [len(l) - len(l.lstrip()) for l in lines if l.strip()]
    margin = min(margins) if margins else 0
    return "\n".join([l[margin:] if l.strip() else l.strip(" \t") for l in lines])
def _textwrap_indent(text, prefix):
    return "".join([prefix + l if l.strip() else l for l in text.splitlines(True)])
class textwrap:
    wrap = _textwrap_wrap
    fill = _textwrap_fill
    shorten = _textwrap_shorten
    dedent = _textwrap_dedent
    indent = _textwrap_indent
