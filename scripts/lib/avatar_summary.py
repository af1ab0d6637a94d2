#!/usr/bin/env python3
"""Summarises Avatar (mobly) runs for scripts/avatar.sh.

  avatar_summary.py [--expected FILE] EXCEPTIONS OURS [REFERENCE]

OURS and REFERENCE are mobly test_summary.yaml files: our DUT's run and Bumble-as-DUT's on
the same rootcanal. Prints, per test class, passed / failed / skipped / errors of each; then
every case we did not pass, with its first error line, the reference's result for it, and
the reason from EXCEPTIONS when one of its rules covers it: each line of that file is
`PATTERN | NEEDLE | REASON`, an fnmatch pattern on "Class.test_name", a text the case's error
(details or stack trace) must contain (`-` for any), and the reason.

Exit status: 0 when every case the reference passed (or, without a reference, every case
that ran and was not skipped by the suite itself) passed with our DUT or is covered by an
exception; 1 otherwise. A case the reference did not run is judged as if without one; with
--expected, every case named in FILE (one "Class.test_name" per line) must have run.
"""
import fnmatch
import sys

import yaml


def records(path):
    out = {}
    with open(path, encoding='utf-8') as f:
        for doc in yaml.safe_load_all(f):
            if isinstance(doc, dict) and doc.get('Type') == 'Record':
                key = f"{doc['Test Class']}.{doc['Test Name']}"
                out[key] = doc
    return out


def first_error(record):
    for field in ('Details', 'Stacktrace'):
        text = record.get(field)
        if text:
            lines = [line.strip() for line in str(text).splitlines() if line.strip()]
            for line in lines:
                if 'Error' in line or 'error' in line or 'assert' in line.lower() or 'details' in line:
                    return line[:160]
            return lines[-1][:160]
    return ''


def exceptions(path):
    rules = []
    with open(path, encoding='utf-8') as f:
        for line in f:
            line = line.rstrip('\n')
            if not line or line.startswith('#'):
                continue
            pattern, needle, reason = (part.strip() for part in line.split(' | ', 2))
            rules.append((pattern, needle, reason))
    return rules


def covered(rules, key, record):
    text = f"{record.get('Details') or ''}\n{record.get('Stacktrace') or ''}"
    for pattern, needle, reason in rules:
        if fnmatch.fnmatchcase(key, pattern) and (needle == '-' or needle in text):
            return reason
    return None


def counts(recs):
    table = {}
    for key, r in recs.items():
        cls = key.split('.', 1)[0]
        row = table.setdefault(cls, {'PASS': 0, 'FAIL': 0, 'SKIP': 0, 'ERROR': 0})
        row[r['Result']] = row.get(r['Result'], 0) + 1
    return table


def main():
    arguments = sys.argv[1:]
    expected = []
    if arguments[:1] == ['--expected']:
        with open(arguments[1], encoding='utf-8') as f:
            expected = [line.strip() for line in f if line.strip()]
        arguments = arguments[2:]
    rules = exceptions(arguments[0])
    ours = records(arguments[1])
    reference = records(arguments[2]) if len(arguments) > 2 else None

    ours_table = counts(ours)
    ref_table = counts(reference) if reference is not None else {}
    header = f"{'class':<20} {'ble pandora: pass / fail / skip / error':<42}"
    if reference is not None:
        header += ' bumble (reference): pass / fail / skip / error'
    print(header)
    for cls in sorted(set(ours_table) | set(ref_table)):
        o = ours_table.get(cls, {})
        line = f"{cls:<20} {o.get('PASS', 0):>4} / {o.get('FAIL', 0):>4} / {o.get('SKIP', 0):>4} / {o.get('ERROR', 0):>4}" + ' ' * 17
        if reference is not None:
            r = ref_table.get(cls, {})
            line += f"{r.get('PASS', 0):>4} / {r.get('FAIL', 0):>4} / {r.get('SKIP', 0):>4} / {r.get('ERROR', 0):>4}"
        print(line)

    defects, explained = [], []
    for key in sorted(ours):
        result = ours[key]['Result']
        if result == 'PASS':
            continue
        ref_result = reference[key]['Result'] if reference is not None and key in reference else None
        if ref_result is not None and ref_result != 'PASS':
            continue  # the reference does not pass it either
        if ref_result is None and result == 'SKIP':
            continue  # skipped by the suite itself (and not run by the reference to say otherwise)
        reason = covered(rules, key, ours[key])
        entry = (key, result, ref_result, first_error(ours[key]), reason)
        (explained if reason else defects).append(entry)
    missing = set(k for k in expected if k not in ours)
    if reference is not None:
        missing |= set(k for k, r in reference.items() if r['Result'] == 'PASS' and k not in ours)
    for key in sorted(missing):
        defects.append((key, 'NOT RUN', reference[key]['Result'] if reference and key in reference else None, '', None))

    if explained:
        print(f'\n{len(explained)} case(s) we do not pass, for a stated reason:')
        reasons = {}
        for key, result, ref_result, error, reason in explained:
            reasons.setdefault(reason, []).append((key, result, ref_result))
        for reason, keys in reasons.items():
            print(f'  {len(keys)} × {reason}')
            for key, result, ref_result in keys[:3]:
                print(f'      {key}: {result}' + (f' (bumble: {ref_result})' if ref_result else ''))
            if len(keys) > 3:
                print(f'      … and {len(keys) - 3} more')
    if defects:
        print(f'\n{len(defects)} case(s) FAILED where the reference passes or that should pass:')
        for key, result, ref_result, error, _ in defects:
            print(f'  {key}: {result}' + (f' (bumble: {ref_result})' if ref_result else ''))
            if error:
                print(f'      {error}')
        return 1
    print('\nevery case passed' + (' that the reference passes, or is listed with its reason' if reference is not None else ', or is listed with its reason'))
    return 0


if __name__ == '__main__':
    sys.exit(main())
