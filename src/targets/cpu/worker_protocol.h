// The parent <-> worker protocol of the cpu target: one JSON document per line.
//
// The worker starts with these file descriptors:
//   kCommandFd  parent -> worker requests        kReplyFd  worker -> parent replies
//   kFirstArenaFd + i  the i-th shared-memory arena      1, 2  a log file the parent reads
//
// Requests and replies:
//   {"op":"load", "kernel":PATH, "threads":N, "arenas":[{"bytes":B,"guards":[[off,len],...]}...],
//    "inputs":[[tensor...] per set], "outputs":[[tensor...] per set]}
//        tensor = {"arena":A, "offset":O, "dtype":D, "shape":[...]}
//     -> {"ok":true, "workspace_bytes":W} | {"ok":false, "status":"rejected", "reason":...}
//   {"op":"run", "first_set":S, "calls":C}   (exposes the batch's sets, then runs it: all timed)
//     -> {"ok":true, "worker_ns":T} | {"ok":false, "return_code":R, "call":I}
// Between requests the parent keeps the worker stopped (SIGSTOP, checked in /proc): it runs only
// from the SIGCONT before a request to its reply.
//   {"op":"count"}
//     -> {"ok":true, "operations":N}   (kernels built with the lint's operation counter only)
//   {"op":"quit"}   (the worker exits 0)
#pragma once

namespace opbench::cpu {

inline constexpr int kCommandFd = 3;
inline constexpr int kReplyFd = 4;
inline constexpr int kFirstArenaFd = 5;

}  // namespace opbench::cpu
