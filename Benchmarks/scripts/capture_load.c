/*
 * Cheap load generator for /v1/capture: N binary WebSocket clients in one epoll loop.
 *
 *   capture_load HOST PORT PATH CLIENTS WARMUP_S SECONDS
 *
 * Opens CLIENTS connections to ws://HOST:PORT/PATH, waits WARMUP_S seconds, then counts the audio
 * payload bytes each client receives over SECONDS seconds and prints one JSON line: connected
 * clients and the fewest / median / most payload bytes per client. It parses WebSocket frames
 * (server frames are never masked) so only binary payload counts. Written in C so the generator's
 * own CPU time stays small next to the server's even with 1000 clients.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

struct client {
    int fd;
    int upgraded;        /* response headers seen */
    char head[4];        /* last bytes of the response head, to find CRLFCRLF */
    uint8_t header[14];  /* frame header being assembled */
    int header_have;
    uint64_t payload_left;
    int opcode;
    uint64_t counted;    /* binary payload bytes inside the window */
};

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

static int header_length(const uint8_t *h, int have) {
    if (have < 2) return 2;
    int len = h[1] & 0x7f;
    int n = 2 + (len == 126 ? 2 : len == 127 ? 8 : 0) + ((h[1] & 0x80) ? 4 : 0);
    return n;
}

static void consume(struct client *c, const uint8_t *p, size_t n, int counting) {
    size_t i = 0;
    while (i < n) {
        if (!c->upgraded) {
            c->head[0] = c->head[1]; c->head[1] = c->head[2]; c->head[2] = c->head[3]; c->head[3] = (char)p[i++];
            if (memcmp(c->head, "\r\n\r\n", 4) == 0) c->upgraded = 1;
            continue;
        }
        if (c->payload_left == 0 && (c->header_have < 2 || c->header_have < header_length(c->header, c->header_have))) {
            c->header[c->header_have++] = p[i++];
            int need = header_length(c->header, c->header_have);
            if (c->header_have >= 2 && c->header_have == need) {
                int len = c->header[1] & 0x7f;
                uint64_t size = len;
                if (len == 126) size = ((uint64_t)c->header[2] << 8) | c->header[3];
                if (len == 127) { size = 0; for (int k = 0; k < 8; k++) size = (size << 8) | c->header[2 + k]; }
                c->opcode = c->header[0] & 0x0f;
                c->payload_left = size;
                c->header_have = 0;
                if (size == 0) continue;
            }
            continue;
        }
        size_t take = n - i < c->payload_left ? n - i : (size_t)c->payload_left;
        if (counting && c->opcode == 2) c->counted += take;
        c->payload_left -= take;
        i += take;
    }
}

static int cmp(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv) {
    if (argc != 7) {
        fprintf(stderr, "usage: %s HOST PORT PATH CLIENTS WARMUP_S SECONDS\n", argv[0]);
        return 2;
    }
    const char *host = argv[1];
    int port = atoi(argv[2]);
    const char *path = argv[3];
    int count = atoi(argv[4]);
    double warmup = atof(argv[5]), seconds = atof(argv[6]);
    struct client *clients = calloc((size_t)count, sizeof *clients);
    int ep = epoll_create1(0);
    char request[2048];
    int rlen = snprintf(request, sizeof request,
                        "GET %s HTTP/1.1\r\nHost: %s:%d\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                        "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n",
                        path, host, port);
    struct sockaddr_in addr = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    inet_pton(AF_INET, host, &addr.sin_addr);
    int connected = 0;
    for (int i = 0; i < count; i++) {
        int fd = socket(AF_INET, SOCK_STREAM, 0);
        if (fd < 0 || connect(fd, (struct sockaddr *)&addr, sizeof addr) != 0) {
            perror("connect");
            if (fd >= 0) close(fd);
            clients[i].fd = -1;
            continue;
        }
        if (write(fd, request, (size_t)rlen) != rlen) { close(fd); clients[i].fd = -1; continue; }
        clients[i].fd = fd;
        struct epoll_event ev = {.events = EPOLLIN, .data.ptr = &clients[i]};
        epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev);
        connected++;
    }
    double start = now() + warmup, end = start + seconds;
    static uint8_t buffer[65536];
    struct epoll_event events[256];
    for (;;) {
        double t = now();
        if (t >= end) break;
        int timeout = (int)((end - t) * 1000) + 1;
        int n = epoll_wait(ep, events, 256, timeout);
        if (n < 0 && errno == EINTR) continue;
        int counting = now() >= start;
        for (int k = 0; k < n; k++) {
            struct client *c = events[k].data.ptr;
            ssize_t got = read(c->fd, buffer, sizeof buffer);
            if (got <= 0) {
                epoll_ctl(ep, EPOLL_CTL_DEL, c->fd, NULL);
                close(c->fd);
                c->fd = -1;
                continue;
            }
            consume(c, buffer, (size_t)got, counting);
        }
    }
    uint64_t *counts = malloc(sizeof(uint64_t) * (size_t)(count ? count : 1));
    int open = 0;
    for (int i = 0; i < count; i++) {
        counts[i] = clients[i].counted;
        if (clients[i].fd >= 0) open++;
    }
    qsort(counts, (size_t)count, sizeof *counts, cmp);
    printf("{\"clients\": %d, \"connected\": %d, \"open_at_end\": %d, \"seconds\": %.3f, "
           "\"bytes_min\": %llu, \"bytes_median\": %llu, \"bytes_max\": %llu}\n",
           count, connected, open, seconds, (unsigned long long)(count ? counts[0] : 0),
           (unsigned long long)(count ? counts[count / 2] : 0), (unsigned long long)(count ? counts[count - 1] : 0));
    return 0;
}
