/*
 * rootcanal-nodelay.c: an LD_PRELOAD shim that turns on TCP_NODELAY on every TCP socket the
 * process creates or accepts.
 *
 * Why: rootcanal 1.10.0 writes each HCI packet to its socket in two pieces (H4 type byte, then
 * the rest) and never sets TCP_NODELAY. With Nagle's algorithm on rootcanal's side and delayed
 * ACKs on the host's side, the second piece of almost every controller->host packet waits for
 * the host's delayed ACK (~40 ms on Linux). Setting TCP_NODELAY on the host's socket cannot fix
 * that, because the delay is on the sender; this shim sets it inside rootcanal.
 *
 * Build:  gcc -shared -fPIC -O2 -o rootcanal-nodelay.so rootcanal-nodelay.c -ldl
 * Use:    LD_PRELOAD=/abs/path/rootcanal-nodelay.so rootcanal -hci_port ...
 * scripts/test.sh builds it into .build-tools/ and measures its effect.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <sys/types.h>

static void set_nodelay(int fd) {
    if (fd < 0) return;
    int type = 0;
    socklen_t len = sizeof type;
    if (getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &len) != 0 || type != SOCK_STREAM) return;
    struct sockaddr_storage addr;
    socklen_t alen = sizeof addr;
    if (getsockname(fd, (struct sockaddr *)&addr, &alen) != 0) return;
    if (addr.ss_family != AF_INET && addr.ss_family != AF_INET6) return;
    int one = 1;
    (void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

int socket(int domain, int type, int protocol) {
    static int (*real_socket)(int, int, int);
    if (!real_socket) real_socket = (int (*)(int, int, int))dlsym(RTLD_NEXT, "socket");
    int fd = real_socket(domain, type, protocol);
    if (fd >= 0 && (domain == AF_INET || domain == AF_INET6) && (type & 0xf) == SOCK_STREAM) {
        int one = 1;
        (void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    }
    return fd;
}

int accept(int sockfd, struct sockaddr *addr, socklen_t *addrlen) {
    static int (*real_accept)(int, struct sockaddr *, socklen_t *);
    if (!real_accept) real_accept = (int (*)(int, struct sockaddr *, socklen_t *))dlsym(RTLD_NEXT, "accept");
    int fd = real_accept(sockfd, addr, addrlen);
    set_nodelay(fd);
    return fd;
}

int accept4(int sockfd, struct sockaddr *addr, socklen_t *addrlen, int flags) {
    static int (*real_accept4)(int, struct sockaddr *, socklen_t *, int);
    if (!real_accept4) real_accept4 = (int (*)(int, struct sockaddr *, socklen_t *, int))dlsym(RTLD_NEXT, "accept4");
    int fd = real_accept4(sockfd, addr, addrlen, flags);
    set_nodelay(fd);
    return fd;
}
