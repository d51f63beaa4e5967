import CoreMetrics
import NIOCore
import NIOHTTP1
import NIOPosix
import Prometheus
