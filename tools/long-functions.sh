#!/bin/sh
# tools/long-functions.sh [MAX [DIR]]
# Lists the functions in DIR (default userspace/) longer than MAX lines (default 80),
# longest first: "LINES FILE:LINE NAME". A line count runs from a definition's first
# line (its return type) to its closing brace. Exit 1 when any is listed.
# A brace-counting pass (comments, strings and raw strings skipped): a brace opened
# after a parameter list, outside another function, starts a function; a lambda is
# counted in the function that holds it. Good enough for this tree's style; the
# compiler is not asked.
set -eu
max=${1:-80}
dir=${2:-userspace}
exec python3 - "$max" "$dir" <<'EOF'
import os, re, sys

max_lines, root = int(sys.argv[1]), sys.argv[2]

def strip(src):
    """Comments, string and character literals become spaces; newlines stay."""
    out, i, n = [], 0, len(src)
    while i < n:
        c = src[i]
        if src.startswith('//', i):
            j = src.find('\n', i)
            j = n if j < 0 else j
            out.append(' ' * (j - i)); i = j
        elif src.startswith('/*', i):
            j = src.find('*/', i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r'[^\n]', ' ', src[i:j])); i = j
        elif c == 'R' and src.startswith('R"', i) and (i == 0 or not (src[i-1].isalnum() or src[i-1] == '_')):
            k = src.find('(', i + 2)
            delim = ')' + src[i+2:k] + '"'
            j = src.find(delim, k)
            j = n if j < 0 else j + len(delim)
            out.append('""' + re.sub(r'[^\n]', ' ', src[i+2:j])); i = j
        elif c in '"\'':
            if c == "'" and i > 0 and src[i-1].isalnum():   # digit separator: 1'000
                out.append(' '); i += 1; continue
            j = i + 1
            while j < n and src[j] != c:
                j += 2 if src[j] == '\\' else 1
            out.append(c + ' ' * (j - i - 1) + c); i = j + 1
        else:
            out.append(c); i += 1
    return ''.join(out)

CONTAINER = re.compile(r'\b(namespace|struct|class|union|enum)\b|extern\s*""\s*$')
CONTROL = re.compile(r'\b(if|for|while|switch|catch|do|else|try)\s*(\(|$)')

def functions(path):
    text = strip(open(path, encoding='utf-8', errors='replace').read())
    found = []
    stack = []            # per open brace: 'container', 'function', 'other'
    starts = []           # per open brace: (line of the definition, name) when a function
    last = 0              # where the current header begins
    line = 1
    for i, c in enumerate(text):
        if c == '\n':
            line += 1
        elif c in ';':
            if not stack or stack[-1] == 'container':
                last = i + 1
        elif c == '{':
            in_function = 'function' in stack
            header = text[last:i]
            kind = 'other'
            if not in_function:
                h = ' '.join(header.split())
                if CONTAINER.search(h) and '(' not in h.split('=')[0]:
                    kind = 'container'
                elif ')' in h and '=' not in h.split('(')[0] and not CONTROL.search(h):
                    kind = 'function'
                elif re.search(r'=\s*\[.*\]\s*(\(.*\))?[^=]*$', h):
                    kind = 'function'          # a lambda at namespace scope
            stack.append(kind)
            if kind == 'function':
                h = re.sub(r'^\s*((public|private|protected)\s*:)?', '', header)
                h = ' ' * (len(header) - len(h)) + h
                lead = len(h) - len(h.lstrip())
                first = text.count('\n', 0, last + lead) + 1
                sig = ' '.join(h.split())
                m = re.search(r'([~\w:]+(?:operator\s*\S+?)?)\s*\(', sig)
                name = m.group(1) if m else sig[:40]
                starts.append((first, name))
            else:
                starts.append(None)
            last = i + 1
        elif c == '}':
            if not stack:
                continue
            kind = stack.pop()
            s = starts.pop()
            if kind == 'function' and s:
                found.append((line - s[0] + 1, path, s[0], s[1]))
            if not stack or stack[-1] == 'container':
                last = i + 1
    return found

rows = []
for d, _, files in os.walk(root):
    for f in files:
        if f.endswith(('.cpp', '.h')):
            rows += functions(os.path.join(d, f))
rows.sort(key=lambda r: (-r[0], r[1], r[2]))
long_ = [r for r in rows if r[0] > max_lines]
for n, path, first, name in long_:
    print(f'{n:5d} {path}:{first} {name}')
print(f'{len(long_)} of {len(rows)} functions over {max_lines} lines', file=sys.stderr)
sys.exit(1 if long_ else 0)
EOF
