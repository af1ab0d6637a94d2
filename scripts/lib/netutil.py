#!/usr/bin/env python3
"""Small network helpers for scripts/test.sh (standard library only).

  netutil.py free-ports N             print N distinct free loopback TCP ports, one per line
  netutil.py wait-listen PID PORT S   wait up to S seconds until process PID itself listens on
                                      127.0.0.1/0.0.0.0:PORT; exit 0 when it does, 1 on timeout,
                                      2 if PID died

wait-listen reads /proc instead of connecting: every TCP connection to rootcanal's HCI port
creates a controller, and a successful connect would not tell whether rootcanal or some other
process owns the port (rootcanal keeps running, and only logs, when it cannot bind).
"""
import os
import socket
import sys
import time


def free_ports(count: int) -> list[int]:
    sockets = []
    try:
        for _ in range(count):  # hold all of them open so the kernel hands out distinct ports
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.bind(("127.0.0.1", 0))
            sockets.append(s)
        return [s.getsockname()[1] for s in sockets]
    finally:
        for s in sockets:
            s.close()


def listening_inodes(port: int) -> set[str]:
    inodes = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            with open(table, encoding="ascii") as f:
                next(f)
                for line in f:
                    fields = line.split()
                    local, state, inode = fields[1], fields[3], fields[9]
                    if state == "0A" and int(local.rsplit(":", 1)[1], 16) == port:
                        inodes.add(inode)
        except FileNotFoundError:
            pass
    return inodes


def process_socket_inodes(pid: int) -> set[str]:
    inodes = set()
    fd_dir = f"/proc/{pid}/fd"
    for name in os.listdir(fd_dir):
        try:
            target = os.readlink(os.path.join(fd_dir, name))
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(target[8:-1])
    return inodes


def alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def wait_listen(pid: int, port: int, timeout: float) -> int:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not alive(pid):
            return 2
        try:
            if listening_inodes(port) & process_socket_inodes(pid):
                return 0
        except (FileNotFoundError, PermissionError):
            if not os.path.isdir("/proc/net"):  # no procfs (not Linux): fall back to connect
                try:
                    socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
                    return 0
                except OSError:
                    pass
        time.sleep(0.05)
    return 1


def main() -> int:
    if len(sys.argv) >= 3 and sys.argv[1] == "free-ports":
        print("\n".join(map(str, free_ports(int(sys.argv[2])))))
        return 0
    if len(sys.argv) == 5 and sys.argv[1] == "wait-listen":
        return wait_listen(int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4]))
    print(__doc__, file=sys.stderr)
    return 64


if __name__ == "__main__":
    sys.exit(main())
