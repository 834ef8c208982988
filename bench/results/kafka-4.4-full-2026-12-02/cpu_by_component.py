"""CPU samples of a Go CPU profile by component.

Usage: go tool pprof -raw PROFILE > raw.txt && python3 cpu_by_component.py raw.txt

A sample counts for the component of its leaf-most frame that belongs to
one (the Go runtime's own frames are skipped, so a channel send or an
allocation counts for the code that made it): sarama (and its compression
and queue packages), badger, a weir package, the bench child's own code;
GC background workers apart. Samples with no such frame are "runtime".
"""
import collections
import re
import sys

txt = open(sys.argv[1]).read()
samples = txt.split('Samples:')[1].split('Locations')[0]
locs, cur = {}, None
for line in txt.split('Locations')[1].split('Mappings')[0].splitlines():
    m = re.match(r'\s*(\d+):\s+0x[0-9a-f]+\s+M=\d+\s+(.*)', line)
    if m:
        cur = int(m.group(1))
        locs[cur] = [m.group(2)]
    elif line.strip() and cur is not None:
        locs[cur].append(line.strip())

cats, total = collections.Counter(), 0
for line in samples.strip().splitlines()[1:]:
    parts = line.split(':')
    if len(parts) < 2:
        continue
    vals, ids = parts[0].split(), parts[1].split()
    v = int(vals[-1])
    total += v
    frames = [f for i in ids if i.isdigit() for f in locs.get(int(i), [])]
    stack = ' '.join(frames)
    if any(k in stack for k in ('gcBgMarkWorker', 'gcDrain', 'bgsweep', 'bgscavenge')):
        cats['gc (background)'] += v
        continue
    c = 'runtime'
    for f in frames:
        if 'badger' in f:
            c = 'badger'
            break
        if any(k in f for k in ('IBM/sarama', 'eapache', 'klauspost', 'pierrec')):
            c = 'sarama'
            break
        if 'twmb/franz-go' in f:
            c = 'franz-go'
            break
        m = re.search(r'weirstream/weir/([a-z/]+)\.', f)
        if m:
            c = 'weir ' + m.group(1)
            break
        if 'main.' in f:
            c = 'bench child'
            break
    cats[c] += v
for k, v in cats.most_common():
    print(f'  {k:32s} {v / 1e9:6.1f} s {100 * v / total:5.1f} %')
print(f'  {"total":32s} {total / 1e9:6.1f} s')
