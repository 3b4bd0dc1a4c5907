"""Reads run.sh's junit files (celery.xml, tsq.xml) and prints the two-column
table of Celery's suite by file, then the tests whose outcomes differ."""
import os
import sys
import xml.etree.ElementTree as ET


def outcomes(path):
    tests = {}
    if not os.path.exists(path):
        return None
    for case in ET.parse(path).getroot().iter('testcase'):
        name = f"{case.get('classname')}::{case.get('name')}"
        kinds = {child.tag for child in case}
        if 'failure' in kinds or 'error' in kinds:
            tests[name] = 'fail'
        elif 'skipped' in kinds:
            tests[name] = 'skip'
        else:
            tests[name] = 'pass'
    return tests


def by_file(tests):
    counts = {}
    for name, outcome in tests.items():
        # A module skipped whole at collection (test_backend.py without azure)
        # has no classname: its name is the module's dotted path.
        head = name.split('::')[0] or name.split('::')[1]
        module = head.split('.')[2] if head.count('.') >= 2 else head
        c = counts.setdefault(module, {'pass': 0, 'fail': 0, 'skip': 0})
        c[outcome] += 1
    return counts


def cell(c):
    if c is None:
        return 'not run'
    parts = [f"{c['pass']} pass"]
    if c['fail']:
        parts.append(f"{c['fail']} fail")
    if c['skip']:
        parts.append(f"{c['skip']} skip")
    return ', '.join(parts)


def main(out):
    sides = {side: outcomes(os.path.join(out, f'{side}.xml')) for side in ('celery', 'tsq')}
    files = sorted({f for tests in sides.values() if tests for f in by_file(tests)})
    print("| file | Celery's worker | a tsq worker |")
    print('|---|---|---|')
    for f in files:
        row = []
        for side in ('celery', 'tsq'):
            tests = sides[side]
            row.append(cell(by_file(tests).get(f) if tests else None))
        total = max(sum(by_file(t).get(f, {}).values()) for t in sides.values() if t)
        print(f'| {f}.py ({total}) | {row[0]} | {row[1]} |')
    if sides['celery'] and sides['tsq']:
        differ = sorted(n for n in set(sides['celery']) | set(sides['tsq'])
                        if sides['celery'].get(n) != sides['tsq'].get(n))
        if differ:
            print('\nDiffering (celery -> tsq):')
            for n in differ:
                print(f"  {n}: {sides['celery'].get(n)} -> {sides['tsq'].get(n)}")


if __name__ == '__main__':
    main(sys.argv[1])
