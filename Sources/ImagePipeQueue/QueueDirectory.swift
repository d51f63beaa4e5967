// The job queue directory: inbox, processing, done and failed.
import ImagePipe
