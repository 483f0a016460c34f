/* The base line: libmosquitto loaded and initialized, no HTTP client. usage: none */
#include "probe.h"

int main(void) {
    mosquitto_lib_init();
    return probe_report();
}
