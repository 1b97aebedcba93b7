#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""The recent-files bridge measured against baselines from the same run.

    bench/recent-files.py USERACTIVITYD [--entries N] [--small N] [--rounds N]

Each round starts useractivityd on a private bus in a fresh HOME, with
desktop entries for 20 apps and a generated recently-used.xbel (50 folders):

  import       daemon start to the newest entry found by Search, with the
               large file, against the same start with no file (baseline);
  during       Peer.Ping round trips while the import runs, against the same
               calls after it (baseline);
  new entry    one entry appended to the large file, written to found by
               Search, against the same append to a small file (baseline):
               the bridge reads the whole file again, so the ratio is the
               cost of the file's size;
  current      the same appended entry (just recorded), written to the
               manager's CurrentActivity naming it, against written to
               found by Search (baseline), both with the large file;
  store        the store's database file and write-ahead log after the import.

Prints medians over the rounds and the ratios. Nothing here touches the
user's session: every bus and directory is the script's own.
"""
import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timedelta, timezone
from xml.sax.saxutils import quoteattr, escape

from gi.repository import Gio, GLib

SERVICE = 'org.example.UserActivity'
PATH = '/org/example/UserActivity'
APPS = [f'com.example.Bench{index:02d}' for index in range(20)]
# Fixed for the run: a file written again must give its old entries the same times.
FIRST_USE = datetime.now(timezone.utc).replace(microsecond=0) - timedelta(days=20)


def xbel(count, base, extra=()):
    """A recently-used.xbel of `count` entries (oldest first) plus `extra` (uri, title, when)."""
    lines = ['<?xml version="1.0" encoding="UTF-8"?>',
             '<xbel version="1.0" xmlns:bookmark="http://www.freedesktop.org/standards/desktop-bookmarks"'
             ' xmlns:mime="http://www.freedesktop.org/standards/shared-mime-info">']
    entries = [(f'file://{base}/folder{index % 50:02d}/document-{index:05d}.txt', f'Document {index} w{index:05d}x',
                FIRST_USE + timedelta(seconds=60 * index), APPS[index % len(APPS)]) for index in range(count)]
    entries += [(uri, title, when, APPS[0]) for uri, title, when in extra]
    for uri, title, when, app in entries:
        stamp = when.strftime('%Y-%m-%dT%H:%M:%SZ')
        lines.append(f'<bookmark href={quoteattr(uri)} added="{stamp}" modified="{stamp}" visited="{stamp}">'
                     f'<title>{escape(title)}</title><info><metadata owner="http://freedesktop.org">'
                     '<mime:mime-type type="text/plain"/><bookmark:applications>'
                     f'<bookmark:application name="{app}" exec="&apos;{app} %u&apos;" modified="{stamp}" count="2"/>'
                     '</bookmark:applications></metadata></info></bookmark>')
    lines.append('</xbel>')
    return '\n'.join(lines) + '\n'


def write_atomically(path, text):
    with open(path + '.tmp', 'w', encoding='utf-8') as handle:
        handle.write(text)
    os.rename(path + '.tmp', path)


class Session:
    """A HOME with XDG directories, the bench apps' desktop entries, a private bus and the daemon."""

    def __init__(self, daemon, xbel_text):
        self.root = tempfile.mkdtemp(prefix='uab-rf-', dir='/var/tmp')
        self.environment = {'HOME': self.root, 'PATH': '/usr/bin:/bin', 'GSETTINGS_BACKEND': 'memory',
                            'XDG_DATA_HOME': self.root + '/data', 'XDG_DATA_DIRS': self.root + '/share',
                            'XDG_CONFIG_HOME': self.root + '/config', 'XDG_STATE_HOME': self.root + '/state',
                            'XDG_CACHE_HOME': self.root + '/cache', 'XDG_RUNTIME_DIR': self.root + '/run'}
        for key in ('XDG_DATA_HOME', 'XDG_CONFIG_HOME', 'XDG_STATE_HOME', 'XDG_CACHE_HOME', 'XDG_RUNTIME_DIR'):
            os.makedirs(self.environment[key], mode=0o700)
        applications = self.root + '/share/applications'
        os.makedirs(applications)
        for app in APPS:
            write_atomically(f'{applications}/{app}.desktop',
                             f'[Desktop Entry]\nType=Application\nName={app}\nExec={app} %U\nMimeType=text/plain;\n')
        self.xbel_path = self.environment['XDG_DATA_HOME'] + '/recently-used.xbel'
        if xbel_text is not None:
            write_atomically(self.xbel_path, xbel_text)
        self.bus_process = subprocess.Popen(
            ['dbus-daemon', '--session', '--nofork', '--print-address=1', f'--address=unix:dir={self.root}/run'],
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=self.environment, text=True)
        self.address = self.bus_process.stdout.readline().strip()
        self.environment['DBUS_SESSION_BUS_ADDRESS'] = self.address
        self.bus = Gio.DBusConnection.new_for_address_sync(
            self.address, Gio.DBusConnectionFlags.AUTHENTICATION_CLIENT | Gio.DBusConnectionFlags.MESSAGE_BUS_CONNECTION)
        self.started = time.monotonic()
        self.daemon = subprocess.Popen([daemon], env=self.environment, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        while not self.call('org.freedesktop.DBus', '/org/freedesktop/DBus', 'org.freedesktop.DBus', 'NameHasOwner',
                            GLib.Variant('(s)', (SERVICE,)))[0]:
            if self.daemon.poll() is not None or time.monotonic() - self.started > 60:
                raise SystemExit('useractivityd did not start')
            time.sleep(0.002)

    def call(self, destination, path, interface, method, parameters=None):
        return self.bus.call_sync(destination, path, interface, method, parameters, None,
                                  Gio.DBusCallFlags.NONE, 60_000, None).unpack()

    def search(self, query):
        return self.call(SERVICE, PATH, SERVICE, 'Search', GLib.Variant('(sa{sv})', (query, {})))[0]

    def current_title(self):
        path = self.call(SERVICE, PATH, 'org.freedesktop.DBus.Properties', 'Get',
                         GLib.Variant('(ss)', (SERVICE, 'CurrentActivity')))[0]
        if path == '/':
            return ''
        return self.call(SERVICE, path, 'org.freedesktop.DBus.Properties', 'Get',
                         GLib.Variant('(ss)', (SERVICE + '.Activity', 'Title')))[0]

    def ping(self):
        began = time.monotonic()
        self.call(SERVICE, PATH, 'org.freedesktop.DBus.Peer', 'Ping')
        return (time.monotonic() - began) * 1000

    def wait_for(self, query, since, pings=None):
        """Seconds from `since` until Search finds `query`; Ping round trips (ms) meanwhile go to `pings`."""
        while not self.search(query):
            if pings is not None:
                pings.append(self.ping())
            if time.monotonic() - since > 120:
                raise SystemExit(f'{query} was not found within 120 s')
        return time.monotonic() - since

    def store_bytes(self, suffix=''):
        """The size of the store's database file, or of its `-wal` with suffix='-wal'."""
        path = self.environment['XDG_STATE_HOME'] + '/useractivity/activities.sqlite3' + suffix
        return os.path.getsize(path) if os.path.exists(path) else 0

    def close(self):
        for process in (self.daemon, self.bus_process):
            process.terminate()
            process.wait()
        shutil.rmtree(self.root)


def append_one(session, count, base):
    """Appends a new entry to a file of `count`; seconds from the write to Search finding it,
    and to CurrentActivity naming it (the entry is just recorded, so it becomes current)."""
    marker = f'zz{int(time.monotonic() * 1000) % 1000000:06d}q'
    title = f'New {marker}'
    text = xbel(count, base, extra=[(f'file://{base}/new/{marker}.txt', title, datetime.now(timezone.utc))])
    began = time.monotonic()
    write_atomically(session.xbel_path, text)
    found = current = None
    while found is None or current is None:
        if current is None and session.current_title() == title:
            current = time.monotonic() - began
        if found is None and session.search(marker):
            found = time.monotonic() - began
        if time.monotonic() - began > 120:
            raise SystemExit(f'{marker} was not found and current within 120 s')
    return found, current


def p50(values):
    return statistics.median(values) if values else float('nan')


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('daemon')
    parser.add_argument('--entries', type=int, default=10_000)
    parser.add_argument('--small', type=int, default=100)
    parser.add_argument('--rounds', type=int, default=3)
    args = parser.parse_args()
    base = '/var/tmp/uab-documents'
    large_text = xbel(args.entries, base)
    newest = f'w{args.entries - 1:05d}x'
    rows = {key: [] for key in ('start', 'import', 'ping_during_p50', 'ping_during_max', 'ping_after_p50',
                                'ping_after_max', 'new_small', 'new_large', 'current_large', 'store', 'wal')}
    for _ in range(args.rounds):
        # Baseline: the same start with no file.
        session = Session(args.daemon, None)
        session.search('anything')
        rows['start'].append(time.monotonic() - session.started)
        session.close()

        session = Session(args.daemon, large_text)
        during = []
        rows['import'].append(session.wait_for(newest, session.started, during))
        after = [session.ping() for _ in range(max(len(during), 200))]
        rows['ping_during_p50'].append(p50(during))
        rows['ping_during_max'].append(max(during) if during else float('nan'))
        rows['ping_after_p50'].append(p50(after))
        rows['ping_after_max'].append(max(after))
        rows['store'].append(session.store_bytes())
        rows['wal'].append(session.store_bytes('-wal'))
        found, current = append_one(session, args.entries, base)
        rows['new_large'].append(found)
        rows['current_large'].append(current)
        session.close()

        session = Session(args.daemon, xbel(args.small, base))
        session.wait_for(f'w{args.small - 1:05d}x', session.started)
        rows['new_small'].append(append_one(session, args.small, base)[0])
        session.close()

    m = {key: p50(values) for key, values in rows.items()}
    print(f'recent-files bridge, {args.entries} entries ({len(large_text.encode()) / 1e6:.1f} MB), '
          f'medians of {args.rounds} rounds')
    print(f'  import: start to the newest entry found  {m["import"]:.2f} s   '
          f'baseline start, no file {m["start"]:.3f} s   ratio {m["import"] / m["start"]:.1f}')
    print(f'  Ping during the import  p50 {m["ping_during_p50"]:.2f} ms  max {m["ping_during_max"]:.1f} ms   '
          f'baseline after it p50 {m["ping_after_p50"]:.2f} ms  max {m["ping_after_max"]:.1f} ms   '
          f'ratio p50 {m["ping_during_p50"] / m["ping_after_p50"]:.1f}')
    print(f'  one new entry, written to found  {m["new_large"]:.2f} s   '
          f'baseline {args.small}-entry file {m["new_small"]:.2f} s   ratio {m["new_large"] / m["new_small"]:.1f}')
    print(f'  the new entry, written to current  {m["current_large"]:.2f} s   '
          f'baseline written to found {m["new_large"]:.2f} s   ratio {m["current_large"] / m["new_large"]:.2f}')
    print(f'  store after the import  {m["store"] / 1e6:.1f} MB, its write-ahead log {m["wal"] / 1e6:.1f} MB')


if __name__ == '__main__':
    sys.exit(main())
