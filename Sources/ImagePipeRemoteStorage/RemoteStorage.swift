// Object stores over HTTP: S3-compatible services and Supabase Storage.
import ImagePipe
