# string, served to programs (its constants and capwords).
def _string_capwords(s, sep=None):
    return (sep or " ").join([w.capitalize() for w in s.split(sep)])
class string:
    ascii_lowercase = "abcdefghijklmnopqrstuvwxyz"
    ascii_uppercase = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
    ascii_letters = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
    digits = "0123456789"
    hexdigits = "0123456789abcdefABCDEF"
    octdigits = "01234567"
    punctuation = "!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~"
    whitespace = " \t\n\r\x0b\x0c"
    printable = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~ \t\n\r\x0b\x0c"
    capwords = _string_capwords
