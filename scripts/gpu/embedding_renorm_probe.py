import torch
w = torch.zeros(3, 0, dtype=torch.float64, device="cuda")
try:
    torch.embedding_renorm_(w, torch.tensor([0, 1, 2, 2, 0], device="cuda"), 0.4, 1.75)
    torch.cuda.synchronize(); print("embedding_renorm [3,0] cuda: OK", w.shape)
except Exception as e:
    print("embedding_renorm [3,0] cuda:", str(e).splitlines()[0])
