/* The fast sender of scripts/bench_veth.sh: sends one frame (read from a file, byte for
 * byte: the script captures it from `rocelab traffic send`, a valid RoCEv2 RC WRITE frame
 * with DSCP 26) over and over for a duration, from THREADS AF_PACKET sockets at once, each
 * with PACKET_QDISC_BYPASS and sendmmsg batches of 64. Prints one JSON line:
 * {"sent": frames the kernel took, "seconds": wall time of the sending, "pps": sent/seconds}
 *
 * Built by the script with `cc -O2 -pthread` into a temporary directory at run time.
 * Usage: bench_sender IFACE FRAME_FILE SECONDS [THREADS]
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <linux/if_packet.h>
#include <net/ethernet.h>
#include <net/if.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define BATCH 64

static unsigned char frame[16384];
static size_t frame_len;
static int ifindex;
static double end_at;
static atomic_ullong total_sent;
static atomic_int failed;

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec / 1e9;
}

static void *sender(void *arg) {
    (void)arg;
    int fd = socket(AF_PACKET, SOCK_RAW, 0); /* protocol 0: send only, receives nothing */
    if (fd < 0) { perror("bench_sender: socket"); atomic_store(&failed, 1); return NULL; }
    int one = 1;
    if (setsockopt(fd, SOL_PACKET, PACKET_QDISC_BYPASS, &one, sizeof one) < 0)
        perror("bench_sender: PACKET_QDISC_BYPASS (sending through the qdisc)");
    struct sockaddr_ll sll = {0};
    sll.sll_family = AF_PACKET;
    sll.sll_ifindex = ifindex;
    sll.sll_halen = ETH_ALEN;
    memcpy(sll.sll_addr, frame, ETH_ALEN);
    if (bind(fd, (struct sockaddr *)&sll, sizeof sll) < 0) {
        perror("bench_sender: bind"); atomic_store(&failed, 1); close(fd); return NULL;
    }
    struct iovec iov[BATCH];
    struct mmsghdr msgs[BATCH];
    memset(msgs, 0, sizeof msgs);
    for (int i = 0; i < BATCH; i++) {
        iov[i].iov_base = frame; /* every slot the same bytes: read only by the kernel */
        iov[i].iov_len = frame_len;
        msgs[i].msg_hdr.msg_iov = &iov[i];
        msgs[i].msg_hdr.msg_iovlen = 1;
    }
    unsigned long long sent = 0;
    unsigned long long loops = 0;
    for (;;) {
        if ((loops++ & 15) == 0 && now() >= end_at) break;
        int n = sendmmsg(fd, msgs, BATCH, 0);
        if (n > 0) sent += (unsigned)n;
        else if (n < 0 && errno != ENOBUFS && errno != EAGAIN && errno != EINTR) {
            perror("bench_sender: sendmmsg"); atomic_store(&failed, 1); break;
        }
    }
    atomic_fetch_add(&total_sent, sent);
    close(fd);
    return NULL;
}

int main(int argc, char **argv) {
    if (argc < 4 || argc > 5) {
        fprintf(stderr, "usage: %s IFACE FRAME_FILE SECONDS [THREADS]\n", argv[0]);
        return 2;
    }
    ifindex = (int)if_nametoindex(argv[1]);
    if (!ifindex) { fprintf(stderr, "bench_sender: no interface %s here\n", argv[1]); return 1; }
    FILE *f = fopen(argv[2], "rb");
    if (!f) { perror(argv[2]); return 1; }
    frame_len = fread(frame, 1, sizeof frame, f);
    fclose(f);
    if (frame_len < 60) { fprintf(stderr, "bench_sender: frame of %zu bytes\n", frame_len); return 1; }
    double secs = atof(argv[3]);
    int threads = argc == 5 ? atoi(argv[4]) : 1;
    if (secs <= 0 || threads < 1 || threads > 64) { fprintf(stderr, "bench_sender: bad arguments\n"); return 2; }

    pthread_t tid[64];
    double start = now();
    end_at = start + secs;
    for (int i = 0; i < threads; i++) pthread_create(&tid[i], NULL, sender, NULL);
    for (int i = 0; i < threads; i++) pthread_join(tid[i], NULL);
    double took = now() - start;
    if (atomic_load(&failed)) return 1;
    unsigned long long s = atomic_load(&total_sent);
    printf("{\"sent\": %llu, \"seconds\": %.6f, \"pps\": %.1f}\n", s, took, s / took);
    return 0;
}
