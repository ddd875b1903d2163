/*
 * Cheap load generator for /v1/playback: N WebSocket playback streams from one thread.
 *
 *   playback_load HOST PORT STREAMS SECONDS [CHUNK_MS]
 *
 * Opens STREAMS connections to ws://HOST:PORT/v1/playback?stream=loadN&rate=24000 (distinct stream
 * names, so the mixer has STREAMS inputs), then on a real-time schedule sends every stream one
 * masked binary frame per CHUNK_MS (default 20): CHUNK_MS of a 500 Hz tone in 24 kHz mono s16le,
 * 960 bytes at 20 ms. Whatever the server sends back is read and dropped. Prints one JSON line:
 * streams, connected, frames sent. Written in C so the sender's own timing is steady and its cost
 * does not matter next to a server running under valgrind.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <math.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define RATE 24000

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Reads the upgrade response up to its blank line; 0 when it is 101 Switching Protocols. */
static int read_upgrade(int fd) {
    char head[4096];
    size_t have = 0;
    while (have < sizeof head - 1) {
        ssize_t got = read(fd, head + have, 1);
        if (got <= 0) return -1;
        have += (size_t)got;
        head[have] = 0;
        if (have >= 4 && memcmp(head + have - 4, "\r\n\r\n", 4) == 0) break;
    }
    return strncmp(head, "HTTP/1.1 101", 12) == 0 ? 0 : -1;
}

int main(int argc, char **argv) {
    if (argc < 5) {
        fprintf(stderr, "usage: %s HOST PORT STREAMS SECONDS [CHUNK_MS]\n", argv[0]);
        return 2;
    }
    const char *host = argv[1];
    int port = atoi(argv[2]);
    int count = atoi(argv[3]);
    double seconds = atof(argv[4]);
    int chunk_ms = argc > 5 ? atoi(argv[5]) : 20;

    /* One frame, built once: FIN + binary, masked, 16-bit length, the payload masked with the key. */
    int samples = RATE * chunk_ms / 1000, payload = samples * 2;
    uint8_t *frame = malloc((size_t)payload + 14);
    int header = 0;
    frame[header++] = 0x82;
    if (payload < 126) {
        frame[header++] = (uint8_t)(0x80 | payload);
    } else {
        frame[header++] = 0x80 | 126;
        frame[header++] = (uint8_t)(payload >> 8);
        frame[header++] = (uint8_t)payload;
    }
    const uint8_t key[4] = {0x37, 0xfa, 0x21, 0x3d};
    memcpy(frame + header, key, 4);
    header += 4;
    for (int i = 0; i < samples; i++) {
        int16_t v = (int16_t)(0.08 * 32767 * sin(2 * M_PI * 500.0 * i / RATE));
        frame[header + 2 * i] = (uint8_t)(v & 0xff) ^ key[(2 * i) & 3];
        frame[header + 2 * i + 1] = (uint8_t)((v >> 8) & 0xff) ^ key[(2 * i + 1) & 3];
    }
    size_t frame_bytes = (size_t)(header + payload);

    int *fds = calloc((size_t)count, sizeof *fds);
    struct sockaddr_in addr = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    inet_pton(AF_INET, host, &addr.sin_addr);
    int connected = 0, one = 1;
    for (int i = 0; i < count; i++) {
        char request[1024];
        int length = snprintf(request, sizeof request,
                              "GET /v1/playback?stream=load%d&rate=%d HTTP/1.1\r\nHost: %s:%d\r\n"
                              "Upgrade: websocket\r\nConnection: Upgrade\r\n"
                              "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n",
                              i, RATE, host, port);
        int fd = socket(AF_INET, SOCK_STREAM, 0);
        if (fd < 0 || connect(fd, (struct sockaddr *)&addr, sizeof addr) != 0 ||
            write(fd, request, (size_t)length) != length || read_upgrade(fd) != 0) {
            fprintf(stderr, "playback_load: stream %d did not open\n", i);
            if (fd >= 0) close(fd);
            fds[i] = -1;
            continue;
        }
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        fds[i] = fd;
        connected++;
    }

    static uint8_t sink[65536];
    long sent = 0;
    struct timespec next;
    clock_gettime(CLOCK_MONOTONIC, &next);
    double end = now() + seconds;
    while (now() < end) {
        for (int i = 0; i < count; i++) {
            if (fds[i] < 0) continue;
            while (recv(fds[i], sink, sizeof sink, MSG_DONTWAIT) > 0) {
            }
            if (write(fds[i], frame, frame_bytes) == (ssize_t)frame_bytes) sent++;
        }
        next.tv_nsec += chunk_ms * 1000000L;
        while (next.tv_nsec >= 1000000000L) {
            next.tv_nsec -= 1000000000L;
            next.tv_sec++;
        }
        while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &next, NULL) == EINTR) {
        }
    }
    for (int i = 0; i < count; i++)
        if (fds[i] >= 0) close(fds[i]);
    printf("{\"streams\": %d, \"connected\": %d, \"frames_sent\": %ld}\n", count, connected, sent);
    return 0;
}
