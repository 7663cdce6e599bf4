// Every thread's stack, printed from inside the process (no debugger needed): where a thread of
// braid's is stuck, it shows what it waits in and what the application's threads are doing.
// For diagnosis only: each thread is interrupted by a signal while it prints.
#pragma once

namespace braid {

// Writes "thread <tid> (<name>)" and its return addresses (symbol+offset where the dynamic symbol
// table names them, else the module and offset, for addr2line) for every thread of the process
// to `fd`, one thread at a time. Threads that do not answer within 200 ms are named as such.
void dump_thread_stacks(int fd);

// Names the calling thread (at most 15 characters show), so dumps and `top -H` tell braid's
// threads apart.
void name_this_thread(const char* name);

}  // namespace braid
