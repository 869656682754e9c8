# Two MPS clients: A runs small ops in a loop; B makes a device-side assert.
# Prints what A sees, and what a new client sees right after.
import os, subprocess, sys, time, torch
if sys.argv[1] == "A":
    x = torch.ones(16, device="cuda")
    t0 = time.time()
    try:
        while time.time() - t0 < 20:
            y = (x * 2).sum().item()
        print("A: no error in 20 s", flush=True)
    except Exception as e:
        print("A saw:", type(e).__name__, str(e).splitlines()[0], flush=True)
        try:
            torch.ones(2, device="cuda").sum().item(); print("A: next op OK")
        except Exception as e2:
            print("A next op:", str(e2).splitlines()[0])
elif sys.argv[1] == "B":
    x = torch.zeros(3, device="cuda")
    i = torch.tensor([5], device="cuda")
    try:
        print(x[i].sum().item())
    except Exception as e:
        print("B saw:", str(e).splitlines()[0], flush=True)
    time.sleep(3)
elif sys.argv[1] == "C":
    try:
        print("C:", torch.ones(2, device="cuda").sum().item(), flush=True)
    except Exception as e:
        print("C saw:", str(e).splitlines()[0], flush=True)
