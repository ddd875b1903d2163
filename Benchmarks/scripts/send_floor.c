/*
 * The floor under a capture fan-out: what one send per client per chunk costs on this machine with
 * no server logic at all.
 *
 *   send_floor CLIENTS SECONDS [BYTES] [CHUNK_MS] [receive]
 *
 * Opens CLIENTS loopback TCP connections whose far ends a child process drains in one epoll loop
 * (as scripts/capture_load.c does), then writes BYTES (default 644: a 20 ms chunk of 16 kHz mono
 * s16le plus its WebSocket header) to every connection every CHUNK_MS (default 20) for SECONDS from
 * one thread woken by a timer, and prints the sender's CPU time in % of one core as JSON. Loopback
 * TCP charges the receiving side's protocol work to the sender, as it does for the server.
 *
 * With `receive` the roles turn round, as for a playback sender: the child writes on the timer and
 * this process waits in epoll and reads each message, and its CPU time is what is printed.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec / 1e9;
}

static double cpu_seconds(void) {
    struct rusage u;
    getrusage(RUSAGE_SELF, &u);
    return u.ru_utime.tv_sec + u.ru_stime.tv_sec + (u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
}

/// Writes `bytes` to every socket every `chunk_ms` for `seconds`; returns the whole writes made.
static long send_loop(int *sockets, int count, double seconds, int bytes, int chunk_ms) {
    char *payload = calloc(1, bytes);
    struct timespec next;
    clock_gettime(CLOCK_MONOTONIC, &next);
    double start = now();
    long sent = 0;
    while (now() - start < seconds) {
        for (int i = 0; i < count; i++) {
            if (write(sockets[i], payload, bytes) == bytes) sent++;
        }
        next.tv_nsec += chunk_ms * 1000000L;
        while (next.tv_nsec >= 1000000000L) {
            next.tv_nsec -= 1000000000L;
            next.tv_sec++;
        }
        clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &next, NULL);
    }
    free(payload);
    return sent;
}

/// Reads whatever arrives on the sockets in one epoll loop until `deadline` (never when negative)
/// or a peer closes; returns the reads made.
static long drain_loop(int *sockets, int count, double deadline) {
    int poller = epoll_create1(0);
    for (int i = 0; i < count; i++) {
        struct epoll_event event = {.events = EPOLLIN, .data.fd = sockets[i]};
        epoll_ctl(poller, EPOLL_CTL_ADD, sockets[i], &event);
    }
    static char sink[65536];
    struct epoll_event events[256];
    long reads = 0;
    for (;;) {
        int wait_ms = -1;
        if (deadline >= 0) {
            double left = deadline - now();
            if (left <= 0) return reads;
            wait_ms = (int)(left * 1000) + 1;
        }
        int ready = epoll_wait(poller, events, 256, wait_ms);
        for (int i = 0; i < ready; i++) {
            if (read(events[i].data.fd, sink, sizeof sink) <= 0) return reads;
            reads++;
        }
    }
}

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: send_floor CLIENTS SECONDS [BYTES] [CHUNK_MS] [receive]\n");
        return 2;
    }
    int clients = atoi(argv[1]);
    double seconds = atof(argv[2]);
    int bytes = argc > 3 ? atoi(argv[3]) : 644;
    int chunk_ms = argc > 4 ? atoi(argv[4]) : 20;
    int receive = argc > 5 && strcmp(argv[5], "receive") == 0;

    int listener = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in address = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t length = sizeof address;
    if (bind(listener, (struct sockaddr *)&address, sizeof address) || listen(listener, 4096) ||
        getsockname(listener, (struct sockaddr *)&address, &length)) {
        perror("listen");
        return 1;
    }
    int *senders = calloc(clients, sizeof *senders);
    int *receivers = calloc(clients, sizeof *receivers);
    int one = 1;
    for (int i = 0; i < clients; i++) {
        receivers[i] = socket(AF_INET, SOCK_STREAM, 0);
        if (connect(receivers[i], (struct sockaddr *)&address, sizeof address)) {
            perror("connect");
            return 1;
        }
        senders[i] = accept(listener, NULL, NULL);
        setsockopt(senders[i], IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    }

    pid_t child = fork();
    if (child == 0) {
        if (receive) {
            for (int i = 0; i < clients; i++) close(receivers[i]);
            send_loop(senders, clients, seconds + 5, bytes, chunk_ms);
            _exit(0);
        }
        for (int i = 0; i < clients; i++) close(senders[i]);
        drain_loop(receivers, clients, -1);
        _exit(0);
    }
    int *mine = receive ? receivers : senders;
    for (int i = 0; i < clients; i++) close(receive ? senders[i] : receivers[i]);

    double start = now(), cpu_start = cpu_seconds();
    long sent = receive ? drain_loop(mine, clients, start + seconds) : send_loop(mine, clients, seconds, bytes, chunk_ms);
    double elapsed = now() - start, cpu = cpu_seconds() - cpu_start;
    for (int i = 0; i < clients; i++) close(mine[i]);
    kill(child, SIGTERM);
    waitpid(child, NULL, 0);
    printf("{\"clients\": %d, \"seconds\": %.3f, \"%s\": %ld, \"cpu_percent\": %.2f, \"us_per_message\": %.2f}\n",
           clients, elapsed, receive ? "reads" : "sends", sent, 100 * cpu / elapsed, sent ? 1e6 * cpu / sent : 0);
    return 0;
}
