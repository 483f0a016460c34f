// Linux's timerfd (libc: no library to link): the clock's alarm, which other threads move
// without waking it (Sources/Threads/Alarm.swift).
#include <sys/timerfd.h>
