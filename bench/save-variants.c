// The ways to save a small file atomically, and what each costs the disk (bench/NOTES.md, "What
// the state writes"): COUNT saves of BYTES bytes in DIR, one every SECONDS, then the bytes the
// block device under DIR received (/sys/dev/block/M:m/stat, the journal and the write-back of
// metadata included, read 35 s after the last save) and the journal's transactions
// (/proc/fs/jbd2/<device>-8/info). Only meaningful on a device nobody else writes (a loop-mounted
// image).
//
//   cc -O2 -o save-variants bench/save-variants.c
//   ./save-variants DIR new|new-no-folder-sync|new-fdatasync|spare|copies COUNT BYTES SECONDS
//
// new: a new file, fsync, rename, fsync of the folder (FileIO.writeAtomically). new-no-folder-sync:
// the same without the folder's fsync. new-fdatasync: fdatasync instead of the file's fsync. spare:
// the spare rewritten in place, fdatasync, RENAME_EXCHANGE with the file, fsync of the folder
// (the StateFileWriter before the two copies). copies: two files rewritten in turn, in place,
// padded to 4 KiB, fdatasync alone; a copy's creation also fsyncs the folder (StateFileWriter).
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

static long long sectors_written(dev_t device) {
    char path[128];
    snprintf(path, sizeof path, "/sys/dev/block/%u:%u/stat", major(device), minor(device));
    FILE *file = fopen(path, "r");
    long long field[7] = {0};
    if (!file || fscanf(file, "%lld %lld %lld %lld %lld %lld %lld", &field[0], &field[1], &field[2], &field[3], &field[4], &field[5], &field[6]) != 7) {
        fprintf(stderr, "cannot read %s\n", path);
        exit(1);
    }
    fclose(file);
    return field[6];
}

static long transactions(dev_t device) {
    char path[128], line[256], name[64] = "";
    snprintf(path, sizeof path, "/sys/dev/block/%u:%u/uevent", major(device), minor(device));
    FILE *file = fopen(path, "r");
    while (file && fgets(line, sizeof line, file)) {
        if (sscanf(line, "DEVNAME=%63s", name) == 1) break;
    }
    if (file) fclose(file);
    snprintf(path, sizeof path, "/proc/fs/jbd2/%s-8/info", name);
    file = fopen(path, "r");
    long count = -1;
    if (file && fscanf(file, "%ld", &count) != 1) count = -1;
    if (file) fclose(file);
    return count;
}

static void sync_folder(const char *dir) {
    int fd = open(dir, O_RDONLY | O_DIRECTORY);
    fsync(fd);
    close(fd);
}

static void save(const char *dir, const char *mode, const char *bytes, int count, int index) {
    char path[512], temporary[600];
    snprintf(path, sizeof path, "%s/state.json", dir);
    if (!strcmp(mode, "copies")) {
        if (index % 2) strcat(path, ".alt");
        int made = access(path, F_OK) != 0;
        int fd = open(path, O_WRONLY | O_CREAT, 0600);
        char block[4096];
        memset(block, ' ', sizeof block);
        memcpy(block, bytes, count < 4096 ? count : 4096);
        pwrite(fd, block, sizeof block, 0);
        fdatasync(fd);
        close(fd);
        if (made) sync_folder(dir);
        return;
    }
    if (!strcmp(mode, "spare")) {
        snprintf(temporary, sizeof temporary, "%s.spare", path);
        int fd = open(temporary, O_WRONLY | O_CREAT, 0600);
        pwrite(fd, bytes, count, 0);
        fdatasync(fd);
        close(fd);
        if (renameat2(AT_FDCWD, temporary, AT_FDCWD, path, RENAME_EXCHANGE) != 0) rename(temporary, path);
        sync_folder(dir);
        return;
    }
    snprintf(temporary, sizeof temporary, "%s.tmp-XXXXXX", path);
    int fd = mkstemp(temporary);
    write(fd, bytes, count);
    if (!strcmp(mode, "new-fdatasync")) fdatasync(fd); else fsync(fd);
    close(fd);
    rename(temporary, path);
    if (strcmp(mode, "new-no-folder-sync")) sync_folder(dir);
}

int main(int argc, char **argv) {
    if (argc != 6) {
        fprintf(stderr, "usage: %s DIR new|new-no-folder-sync|new-fdatasync|spare|copies COUNT BYTES SECONDS\n", argv[0]);
        return 64;
    }
    const char *dir = argv[1], *mode = argv[2];
    int saves = atoi(argv[3]), size = atoi(argv[4]), seconds = atoi(argv[5]);
    struct stat info;
    if (stat(dir, &info) != 0) { perror(dir); return 66; }
    char *bytes = malloc(size);
    memset(bytes, ' ', size);
    sync();
    sleep(35);  // what earlier writes left to write back goes out first
    long long sectors = sectors_written(info.st_dev);
    long commits = transactions(info.st_dev);
    for (int i = 0; i < saves; i++) {
        bytes[i % size] = 'a' + i % 26;  // each save different, as the state is
        save(dir, mode, bytes, size, i);
        sleep(seconds);
    }
    sleep(35);  // the metadata's write-back (30 s) of the last saves
    printf("%s: %d saves of %d bytes, one every %d s: %lld bytes a save reached the device, %ld journal commits\n", mode, saves,
           size, seconds, (sectors_written(info.st_dev) - sectors) * 512 / saves, transactions(info.st_dev) - commits);
    return 0;
}
