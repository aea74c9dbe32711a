import FleetTransport
import Foundation
import Glibc
import Testing

@Suite("Epoll and EventNotifier")
struct EpollTests {
    @Test("an eventfd signalled from another thread wakes the waiter once; signals coalesce")
    func wakeupFromAnotherThread() throws {
        let epoll = try Epoll(capacity: 8)
        let notifier = try EventNotifier()
        try epoll.add(notifier.fileDescriptor, events: .readable, token: 42)
        #expect(try epoll.wait(timeoutMilliseconds: 0) == 0)
        let thread = Thread {
            try? notifier.signal()
            try? notifier.signal()
        }
        thread.start()
        var ready = 0
        for _ in 0..<50 where ready == 0 { ready = try epoll.wait(timeoutMilliseconds: 100) }
        #expect(ready == 1)
        #expect(epoll.token(at: 0) == 42)
        #expect(epoll.events(at: 0) == .readable)
        // Both signals may or may not have landed yet; drain until both are counted.
        var drained: UInt64 = 0
        for _ in 0..<50 where drained < 2 {
            drained += try notifier.drain()
            if drained < 2 { _ = try epoll.wait(timeoutMilliseconds: 100) }
        }
        #expect(drained == 2)
        #expect(try notifier.drain() == 0)
        #expect(try epoll.wait(timeoutMilliseconds: 0) == 0)
    }

    @Test("level-triggered readiness repeats until drained; edge-triggered reports once per arrival")
    func levelVersusEdge() throws {
        var pair: [Int32] = [0, 0]
        #expect(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0, &pair) == 0)
        let writer = TCPSocket(adopting: pair[0])
        let reader = TCPSocket(adopting: pair[1])
        defer {
            try? writer.close()
            try? reader.close()
        }
        let level = try Epoll(capacity: 4)
        let edge = try Epoll(capacity: 4)
        try level.add(reader.fileDescriptor, events: .readable, token: 1)
        try edge.add(reader.fileDescriptor, events: [.readable, .edgeTriggered], token: 2)
        try writeAll([1, 2, 3, 4], to: writer)
        #expect(try level.wait(timeoutMilliseconds: 1_000) == 1)
        #expect(try level.wait(timeoutMilliseconds: 0) == 1)  // still readable: reported again
        #expect(try edge.wait(timeoutMilliseconds: 1_000) == 1)
        #expect(edge.token(at: 0) == 2)
        #expect(try edge.wait(timeoutMilliseconds: 0) == 0)  // same data, no new edge
        try writeAll([5], to: writer)
        #expect(try edge.wait(timeoutMilliseconds: 1_000) == 1)  // new data, new edge
        #expect(try readBytes(5, from: reader) == [1, 2, 3, 4, 5])
        #expect(try level.wait(timeoutMilliseconds: 0) == 0)  // drained
    }

    @Test("modify changes the interest set; remove stops reports")
    func modifyAndRemove() throws {
        var pair: [Int32] = [0, 0]
        #expect(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0, &pair) == 0)
        let first = TCPSocket(adopting: pair[0])
        let second = TCPSocket(adopting: pair[1])
        defer {
            try? first.close()
            try? second.close()
        }
        let epoll = try Epoll(capacity: 4)
        try epoll.add(first.fileDescriptor, events: .readable, token: 5)
        #expect(try epoll.wait(timeoutMilliseconds: 0) == 0)  // nothing to read
        try epoll.modify(first.fileDescriptor, events: [.readable, .writable], token: 6)
        #expect(try epoll.wait(timeoutMilliseconds: 0) == 1)
        #expect(epoll.token(at: 0) == 6)
        #expect(epoll.events(at: 0) == .writable)
        try epoll.remove(first.fileDescriptor)
        #expect(try epoll.wait(timeoutMilliseconds: 0) == 0)
        let error = #expect(throws: SystemError.self) { try epoll.remove(first.fileDescriptor) }
        #expect(error?.description == "epoll_ctl(DEL) failed: No such file or directory (errno 2)")
    }

    @Test("more ready sockets than the event array holds are reported over several waits")
    func boundedEventArray() throws {
        let epoll = try Epoll(capacity: 2)
        var notifiers: [EventNotifier] = []
        for token in 0..<5 {
            let notifier = try EventNotifier()
            try epoll.add(notifier.fileDescriptor, events: [.readable, .oneShot], token: UInt64(token))
            try notifier.signal()
            notifiers.append(notifier)
        }
        var seen: [UInt64] = []
        for _ in 0..<3 {
            let ready = try epoll.wait(timeoutMilliseconds: 0)
            #expect(ready <= 2)
            for index in 0..<ready { seen.append(epoll.token(at: index)) }
        }
        #expect(seen.sorted() == [0, 1, 2, 3, 4])
    }

    @Test("an epoll fd is itself readable while it has ready events, so a lane can watch it with one Dispatch source")
    func epollFdIsReadable() throws {
        let inner = try Epoll(capacity: 4)
        let outer = try Epoll(capacity: 4)
        let notifier = try EventNotifier()
        try inner.add(notifier.fileDescriptor, events: .readable, token: 1)
        try outer.add(inner.fileDescriptor, events: .readable, token: 99)
        #expect(try outer.wait(timeoutMilliseconds: 0) == 0)
        try notifier.signal()
        #expect(try outer.wait(timeoutMilliseconds: 1_000) == 1)
        #expect(outer.token(at: 0) == 99)
        #expect(try inner.wait(timeoutMilliseconds: 0) == 1)
        #expect(try notifier.drain() == 1)
        #expect(try outer.wait(timeoutMilliseconds: 0) == 0)
    }

    @Test("wait(into:) fills the caller's list with tokens, flags and count, and leaves the epoll's own list alone")
    func waitIntoSeparateList() throws {
        let epoll = try Epoll(capacity: 8)
        let first = try EventNotifier()
        let second = try EventNotifier()
        try epoll.add(first.fileDescriptor, events: .readable, token: 11)
        try epoll.add(second.fileDescriptor, events: .readable, token: 12)
        let list = EpollReadyList(capacity: 4)
        #expect(list.count == 0)
        #expect(try epoll.wait(timeoutMilliseconds: 0, into: list) == 0)
        #expect(list.count == 0)

        try second.signal()
        #expect(try epoll.wait(timeoutMilliseconds: 0) == 1)  // the epoll's own list: [12]
        #expect(try second.drain() == 1)
        try first.signal()
        #expect(try epoll.wait(timeoutMilliseconds: 0, into: list) == 1)  // the caller's list: [11]
        #expect(list.count == 1)
        #expect(list.token(at: 0) == 11)
        #expect(list.events(at: 0) == .readable)
        #expect(epoll.token(at: 0) == 12)
        #expect(epoll.events(at: 0) == .readable)

        // A list holds at most its capacity; level-triggered, the rest comes with the next wait.
        try second.signal()
        let single = EpollReadyList(capacity: 1)
        #expect(try epoll.wait(timeoutMilliseconds: 0, into: single) == 1)
        let firstToken = single.token(at: 0)
        #expect(try epoll.wait(timeoutMilliseconds: 0, into: list) == 2)
        #expect(Set([list.token(at: 0), list.token(at: 1)]) == [11, 12])
        #expect(list.events(at: 0) == .readable && list.events(at: 1) == .readable)
        #expect([11, 12].contains(firstToken))
        #expect(epoll.token(at: 0) == 12)  // still the own list's one event
    }
}
