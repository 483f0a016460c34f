import Commands
import Glibc
import Threads

// Every command's tasks on a thread of their own (`ThreadExecutor`), not on libdispatch's pool,
// whose monitor wakes the process every second once the pool has run anything: a daemon that
// sleeps between readings sleeps. Without the thread, the pool.
let status = await ThreadExecutor.onThread(named: "tasks") { await Commands.main(Array(CommandLine.arguments.dropFirst())) }
exit(status.rawValue)
