#!/usr/bin/env python3
"""Which of a running process's executable pages are resident (issue 34, idle memory).

    python3 bench/resident.py PID

Reads /proc/PID/maps and /proc/PID/pagemap (root: the kernel hides the page frames from
others, not the present bit) and prints, for each mapping of the executable, how much is
mapped and how much is resident, then for its code how the resident pages spread over 64 KiB
blocks (the kernel's fault-around maps a touched page's neighbours with it, so code touched
here and there across the binary is resident nearly whole).
"""
import os
import struct
import sys

PAGE = 4096
BLOCK = 16  # pages: 64 KiB


def main():
    pid = int(sys.argv[1])
    exe = os.path.realpath(f"/proc/{pid}/exe")
    pagemap = open(f"/proc/{pid}/pagemap", "rb")
    for line in open(f"/proc/{pid}/maps"):
        parts = line.split()
        if len(parts) < 6 or parts[5] != exe:
            continue
        start, end = (int(x, 16) for x in parts[0].split("-"))
        n = (end - start) // PAGE
        pagemap.seek(start // PAGE * 8)
        data = pagemap.read(n * 8)
        present = [struct.unpack_from("<Q", data, i * 8)[0] >> 63 for i in range(n)]
        print(f"{parts[1]} at offset {int(parts[2], 16):#x}: {n * PAGE / 2**20:.1f} MiB mapped, "
              f"{sum(present) * PAGE / 2**20:.1f} MiB resident")
        if parts[1].startswith("r-x"):
            blocks = [present[i:i + BLOCK] for i in range(0, n, BLOCK)]
            print(f"  code: {sum(present)} of {n} pages resident; of its {len(blocks)} 64 KiB blocks, "
                  f"{sum(1 for b in blocks if any(b))} have a resident page and "
                  f"{sum(1 for b in blocks if all(b))} are resident whole")


if __name__ == "__main__":
    main()
