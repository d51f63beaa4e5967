// The error a call throws, as a value a test can look into.
import ImagePipe

/// The ``ImagePipeError`` `body` throws, or nil when it returns.
func thrownError<T>(_ body: () throws(ImagePipeError) -> T) -> ImagePipeError? {
    do {
        _ = try body()
        return nil
    } catch {
        return error
    }
}
